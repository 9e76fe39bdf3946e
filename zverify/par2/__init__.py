"""PAR2 recovery data: the par2 program (tool) and a reader of its files (packets)."""

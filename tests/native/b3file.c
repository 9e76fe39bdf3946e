/*
 * b3file.c — print the BLAKE3 digest of each file named on the command line, hashed with
 * the packaged BLAKE3 C sources exactly as the core uses them (blake3_hasher_update over
 * 128 KiB reads).  tests/native/test_blake3.py builds it once per SIMD kernel (the others
 * disabled with BLAKE3_NO_*), so every kernel the dispatcher may pick on some CPU is checked
 * against the `blake3` package, not only the one this CPU selects.
 */
#include <stdio.h>

#include "blake3.h"

int main(int argc, char **argv)
{
    static unsigned char buf[128 << 10];
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            perror(argv[i]);
            return 2;
        }
        blake3_hasher h;
        blake3_hasher_init(&h);
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
            blake3_hasher_update(&h, buf, n);
        int failed = ferror(f);
        fclose(f);
        if (failed)
            return 2;
        unsigned char out[BLAKE3_OUT_LEN];
        blake3_hasher_finalize(&h, out, sizeof out);
        for (size_t k = 0; k < sizeof out; k++)
            printf("%02x", out[k]);
        printf("  %s\n", argv[i]);
    }
    return 0;
}

/*
 * fuzz_slurm_format.c -- libFuzzer harness for the format strings of the
 * Slurm commands (src/cli/slurm/format.c): squeue's and sinfo's "%.18i
 * %9P", squeue's -O "JobID:20" and sacct's -o "JobID%20", and sbatch's -o/-e
 * patterns.  The first byte chooses the parser, the rest (up to a NUL) is
 * the string.  Checks:
 *   - a refused format leaves the result alone;
 *   - every item has a width 0..10000, a field has a name, literal text is
 *     not empty, and a value laid out in an item is exactly its width when
 *     it has one (cut or padded) or the value itself;
 *   - a pattern becomes one line of shell (no newline), and a refused one
 *     adds nothing.
 * Corpus: tests/fuzz/corpus/slurm_format.
 */
#include "fuzz.h"
#include "slurm_int.h"

static void
check_fmt(const al_sl_fmt_t *f)
{
    CHECK(f->n <= 256);
    static const char *const values[] = { "", "x", "a value longer than ten" };
    for (size_t i = 0; i < f->n; i++) {
        const al_sl_item_t *it = &f->v[i];
        CHECK(it->text != NULL);
        CHECK(it->width >= 0 && it->width <= 10000);
        if (it->field == 0) {
            CHECK(it->text[0] != '\0');
            continue;
        }
        CHECK(it->text[0] != '\0');
        for (size_t k = 0; k < 3; k++) {
            al_buf_t b;
            al_buf_init(&b);
            al_sl_put(&b, it, values[k], k == 2);
            size_t len = strlen(values[k]);
            CHECK(b.len == (it->width > 0 ? (size_t)it->width : len));
            al_buf_fini(&b);
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    char *s = fuzz_cstr(data + 1, size - 1);
    al_sl_fmt_t f = { (al_sl_item_t *)&f, 99 };
    int rc;
    switch (data[0] % 4) {
    case 0:
        rc = al_sl_fmt_percent(s, &f);
        break;
    case 1:
        rc = al_sl_fmt_named(s, ':', &f);
        break;
    case 2:
        rc = al_sl_fmt_named(s, '%', &f);
        break;
    default: {
        al_buf_t b;
        al_buf_init(&b);
        al_buf_puts(&b, "exec >");
        rc = al_sl_pattern(s, "job'name", "us$er", &b);
        if (rc == 0)
            CHECK(strchr(al_buf_cstr(&b), '\n') == NULL);
        else
            CHECK(b.len == 6);
        al_buf_fini(&b);
        free(s);
        return 0;
    }
    }
    if (rc == 0) {
        check_fmt(&f);
        al_sl_fmt_fini(&f);
    } else {
        CHECK(f.v == (al_sl_item_t *)&f && f.n == 99);
    }
    free(s);
    return 0;
}

/* print.c — STUB: being written. */
#include "ir.h"
#include <stdio.h>
void gv_print_module(const gv_module *m, void *file) { (void)m; fprintf(file, "// printer not implemented\n"); }

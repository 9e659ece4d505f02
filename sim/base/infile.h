/*
 * infile.h - opening an input file for reading, the one way every reader
 * does it: the messages "PATH: cannot open: REASON" and, for a directory
 * (which fopen opens for reading on Linux, fread then failing with a bare
 * EISDIR), "PATH: is a directory".
 */
#ifndef WEFT_INFILE_H
#define WEFT_INFILE_H

#include <stdio.h>

#include "err.h"

/* Open `path` for reading (binary); the caller closes it.  NULL, with
 * `err` set, when it cannot be opened or is a directory. */
FILE *infile_open(const char *path, struct weft_err *err);

#endif

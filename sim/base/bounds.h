/*
 * bounds.h - explicit upper bounds on every count read from input.  A value
 * above its limit is rejected with a message naming the limit, so that a typo
 * ("nodes=1000000") fails fast instead of exhausting memory.
 */
#ifndef WEFT_BOUNDS_H
#define WEFT_BOUNDS_H

#define WEFT_MAX_GPUS 131072          /* GPUs in one cluster */
#define WEFT_MAX_NODES 65536          /* nodes in one cluster */
#define WEFT_MAX_GPUS_PER_NODE 576    /* GPUs in one NVLink domain (NVL576) */
#define WEFT_MAX_NICS_PER_NODE 576    /* NICs in one node or domain */
#define WEFT_MAX_NODES_PER_LEAF 1024  /* nodes under one leaf switch group */
#define WEFT_MAX_LEAVES_PER_POD 1024  /* leaves under one pod */
#define WEFT_MAX_CATALOG_ENTRIES 256  /* GPUs, NICs or nodes in a catalog */
#define WEFT_MAX_NAME 64              /* bytes in a preset or entry name */
#define WEFT_MAX_XML_BYTES (16 << 20) /* size of one input XML file */
#define WEFT_MAX_SCALE 1.0e6          /* a what-if scaling factor */
#define WEFT_MAX_ORIGIN 160           /* bytes of "file:line: <elem> ..." */
#define WEFT_MAX_LAYERS 4096          /* Transformer layers */
#define WEFT_MAX_HIDDEN (1L << 20)    /* hidden size */
#define WEFT_MAX_HEADS 16384          /* attention heads */
#define WEFT_MAX_VOCAB (1L << 24)     /* vocabulary */
#define WEFT_MAX_SEQ (1L << 24)       /* sequence length */
#define WEFT_MAX_EXPERTS 4096         /* MoE experts */
#define WEFT_MAX_DEGREE 131072        /* one parallel degree */
#define WEFT_MAX_BATCH (1L << 24)     /* global batch in sequences */
#define WEFT_MAX_MICROBATCHES 65536   /* micro-batches per pipeline */
#define WEFT_MAX_TASKS (1L << 27)     /* tasks of one stage program */
#define WEFT_MAX_GRAPH_BYTES (4.0 * (1L << 30)) /* a task graph and the
                                        engine's state for it, estimated
                                        before building (--force lifts it) */
#define WEFT_MAX_CATALOG_FILES 8      /* --catalog files of one command */
#define WEFT_MAX_ARGS 256             /* arguments of one command line */

#endif

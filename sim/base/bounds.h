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

#endif

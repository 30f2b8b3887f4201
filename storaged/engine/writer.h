/*
 * The writer's calls for the rest of the engine (writer.c; those of the I/O
 * layer are in uring.h).
 */
#ifndef GOBLIN_WRITER_H
#define GOBLIN_WRITER_H

#include "engine-t.h"

/* Wakes the gs_io threads with stores waiting for admission room. */
void writer_wake_admission(struct gs_engine *e);
/* After a sync: wakes the gs_io threads with stores waiting for one. */
void writer_wake_synced(struct gs_engine *e);

#endif /* GOBLIN_WRITER_H */

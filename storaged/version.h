/* goblin-store's version: --version, `stats`' version, the ready line. */
#ifndef GOBLIN_VERSION_H
#define GOBLIN_VERSION_H

#define GOBLIN_VERSION "1.0.0"

#endif

# bench/rig: the emulated HDD/SSD device model (goblin-devmodel), the
# network's delay line (goblin-netdelay) and the scripts around them (up,
# down, exec-in-server-cgroup, fio-check, net-check).

PROGRAMS     += goblin-devmodel goblin-netdelay
DEB_PACKAGES += libfuse3-dev fuse3 fio e2fsprogs util-linux mount python3 iproute2

# Expanded at build time, after `make deps` has installed libfuse3-dev.
RIG_FUSE_CFLAGS = $(shell pkg-config --cflags fuse3)
RIG_FUSE_LIBS   = $(shell pkg-config --libs fuse3)
RIG_DEVMODEL    = $(wildcard bench/rig/devmodel*.c) shared/size.c
RIG_DEVMODEL_H  = bench/rig/devmodel.h shared/size.h bench/rig/rig.mk

build/goblin-devmodel: $(RIG_DEVMODEL) $(RIG_DEVMODEL_H)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(OPTFLAGS) $(RIG_FUSE_CFLAGS) -o $@ $(RIG_DEVMODEL) $(RIG_FUSE_LIBS) -lm

build/asan/goblin-devmodel: $(RIG_DEVMODEL) $(RIG_DEVMODEL_H)
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(ASANFLAGS) $(RIG_FUSE_CFLAGS) -o $@ $(RIG_DEVMODEL) $(RIG_FUSE_LIBS) -lm

build/goblin-netdelay: bench/rig/netdelay.c bench/rig/rig.mk
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(OPTFLAGS) -o $@ bench/rig/netdelay.c

build/asan/goblin-netdelay: bench/rig/netdelay.c bench/rig/rig.mk
	@mkdir -p $(@D)
	$(CC) $(BASEFLAGS) $(ASANFLAGS) -o $@ bench/rig/netdelay.c

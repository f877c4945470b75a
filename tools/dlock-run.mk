# tools/dlock-run.mk: build and install dlock-run, the command-line runner.
#
# Included by the top Makefile after PGXS, so PG_CONFIG, CC, CFLAGS (with
# COPT, which CI sets to -Werror), bindir, INSTALL_PROGRAM and MKDIR_P are
# PostgreSQL's.  dlock-run is a libpq client: it needs libpq-dev, not the
# server headers.  It only adds prerequisites to the PGXS targets all,
# install, uninstall and clean; their recipes stay PGXS's.

DLOCK_RUN = tools/dlock-run
# libpq's headers come with the installation (pg_config --includedir), or,
# for a copy of a Debian server package, from libpq-dev (pkg-config).
DLOCK_RUN_INCLUDEDIR := $(shell d=$$($(PG_CONFIG) --includedir); \
	[ -f "$$d/libpq-fe.h" ] || d=$$(pkg-config --variable=includedir libpq 2>/dev/null || echo /usr/include/postgresql); \
	echo "$$d")
DLOCK_RUN_LIBDIR := $(shell $(PG_CONFIG) --libdir)
DLOCK_RUN_CFLAGS = -Wall -Wextra -DDLOCK_VERSION='"$(EXTVERSION)"' -I$(DLOCK_RUN_INCLUDEDIR)
DLOCK_RUN_LIBS = -L$(DLOCK_RUN_LIBDIR) -lpq

all: $(DLOCK_RUN)

$(DLOCK_RUN): tools/dlock-run.c $(EXTENSION).control
	$(CC) $(CFLAGS) $(DLOCK_RUN_CFLAGS) -o $@ tools/dlock-run.c $(DLOCK_RUN_LIBS)

.PHONY: install-dlock-run uninstall-dlock-run clean-dlock-run
install: install-dlock-run
install-dlock-run: $(DLOCK_RUN)
	$(MKDIR_P) '$(DESTDIR)$(bindir)'
	$(INSTALL_PROGRAM) $(DLOCK_RUN) '$(DESTDIR)$(bindir)/dlock-run'

uninstall: uninstall-dlock-run
uninstall-dlock-run:
	rm -f '$(DESTDIR)$(bindir)/dlock-run'

clean: clean-dlock-run
clean-dlock-run:
	rm -f $(DLOCK_RUN)

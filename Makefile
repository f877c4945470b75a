# Copyright (c) 2026, the dlock developers
# dlock: lease-style distributed locks with fencing tokens for PostgreSQL

EXTENSION = dlock

MODULE_big = dlock
OBJS = \
	src/acquire.o \
	src/api.o \
	src/xactstate.o \
	src/args.o \
	src/dlock.o \
	src/events.o \
	src/fence.o \
	src/lease.o \
	src/locktag.o \
	src/relation.o \
	src/stats.o \
	src/revoke.o \
	src/token.o \
	src/undelivered.o \
	src/wait.o \
	src/waiters.o

# The full install script of the version in progress (default_version in
# dlock.control, the one version source) is made at build time from the last
# released full script and the update to it, so no line of SQL is kept
# twice by hand.  Released scripts are committed and frozen; when a version
# is released, its generated scripts are committed as they were built
# (docs/internals.md, "Install scripts").  The update script itself is
# generated too: its source, the committed dlock--X--V.sql, includes the
# SQL edition's files that both editions share ("-- @include FILE" lines,
# src/sql/include.awk), and make writes the script to build/.
VERSION := $(shell sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" $(EXTENSION).control)
UPDATE_SOURCE := $(wildcard $(EXTENSION)--*--$(VERSION).sql)
UPDATE_SCRIPT := $(addprefix build/,$(UPDATE_SOURCE))
FULL_SCRIPT := $(if $(UPDATE_SOURCE),$(EXTENSION)--$(VERSION).sql)
FROM_SCRIPT := $(patsubst $(EXTENSION)--%--$(VERSION).sql,$(EXTENSION)--%.sql,$(UPDATE_SOURCE))
DATA = $(sort $(filter-out $(UPDATE_SOURCE),$(wildcard $(EXTENSION)--*.sql)) $(FULL_SCRIPT))
EXTRA_CLEAN = $(FULL_SCRIPT) build

# The SQL edition (issue 26, docs/editions.md): src/sql/generate.sh makes
# its three forms from src/sql/NN_*.sql; "make install" installs the trusted
# extension beside the C one, dist/ holds the psql script and the pg_tle
# installer.
SQL_EDITION_SOURCES := $(sort $(wildcard src/sql/[0-9][0-9]_*.sql))
SQL_EDITION := dlock_sql.control dlock_sql--$(VERSION).sql \
	dist/dlock_sql--$(VERSION).psql dist/dlock_sql-pgtle--$(VERSION).sql
DATA_built := dlock_sql.control dlock_sql--$(VERSION).sql $(UPDATE_SCRIPT)
EXTRA_CLEAN += $(SQL_EDITION)
# (This rule comes before PGXS's "all": plain "make" still makes "all".)
.DEFAULT_GOAL := all
.PHONY: sql-edition
sql-edition: $(SQL_EDITION)
$(SQL_EDITION) &: $(SQL_EDITION_SOURCES) src/sql/generate.sh $(EXTENSION).control
	bash src/sql/generate.sh .

REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --inputdir=.

# MERGE exists from PostgreSQL 15 on: its spec is skipped on 14 (MAJORVERSION
# comes from PGXS, hence the recursive "=").
ISOLATION = $(filter-out $(if $(filter 14,$(MAJORVERSION)),fence_merge),\
	$(patsubst test/specs/%.spec,%,$(sort $(wildcard test/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CPPFLAGS = -I$(srcdir)/src
# PostgreSQL's own headers have unused parameters, hence the one exception.
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter

PG_CONFIG ?= pg_config

# "make check", "make check-quick", "make check-versions", "make demo" and
# "make bench" drive a
# whole run from a clean machine (packages, build, install, a throwaway
# cluster): they do not need PGXS themselves, and must not collide with its
# own "check" target.  "make check" tests Debian's PostgreSQL 15, or the
# installation PG_CONFIG names; every suite runs.  "make check-quick" runs
# regress, isolation and pgTAP only (about 30 seconds).  DLOCK_SUITES picks
# suites by name and DLOCK_VERSIONS majors (test/README.md).
#
# "make check-versions" unpacks every PostgreSQL archive in SHARED_PG into
# PG_DIR, adds pgTAP to it, and runs "make check" against each (14 and 18),
# except LONG_SUITES: long stress and cluster suites, and the suites of the
# clients (dlock-run, the Python, Go and Node.js clients, the example worker), whose subject
# does not depend on the major (they run on 15; the SQL they call is tested
# on every major by the other suites, and dlock-run's failover by
# test/t/011).  That keeps CI well under 15 minutes on two cores.  One "N passed, N failed" line per
# version, then the total.  Any new file in sql/, test/specs, test/pgtap,
# test/t or test/scripts runs on every version unless listed here.
#
# "make ha-check" runs the HA harness alone (test/ha, docs/ha.md): etcd and
# three Patroni members with dlock, forced failovers under a fenced load.  It
# is also the suite "ha" of "make check" (about 3 minutes, on 15 only).
DRIVER_GOALS = check check-quick check-versions demo bench ha-check
TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
SHARED_PG ?= $(abspath $(TOP)/../shared/pg)
PG_DIR ?= $(TOP)/tmp_pg
LONG_SUITES = fence_stress pgbouncer million 003_crash_stream \
	dlock_run python_client example_worker ha go node \
	dlock_run_sql python_client_sql example_worker_sql sql_tokens go_sql node_sql \
	fence_stress_sql tap_sql

ifneq ($(filter $(DRIVER_GOALS),$(MAKECMDGOALS)),)

.PHONY: $(DRIVER_GOALS) clean
check:
	@bash test/run check
check-quick:
	@DLOCK_SUITES="regress isolation pgtap" bash test/run check
# "make clean check": the clean is PGXS's, in a make of its own.
clean:
	@$(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) clean
check-versions:
	@DLOCK_SHARED_PG="$(SHARED_PG)" DLOCK_PG_DIR="$(PG_DIR)" \
		DLOCK_SKIP_SUITES="$(LONG_SUITES)" bash test/run check-versions
demo:
	@bash test/run demo
bench:
	@bash test/run bench
ha-check:
	@bash test/run ha-check

else

PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifeq ($(PGXS),)
# No pg_config: "make clean" still works; anything else says what is missing.
ifeq ($(filter-out clean sql-edition,$(or $(MAKECMDGOALS),all)),)
.PHONY: clean
clean:
	rm -f $(OBJS) dlock.so dlock.bc $(OBJS:.o=.bc)
	rm -rf results/ regression.diffs regression.out tmp_check/ tmp_check_iso/ log/ output_iso/
	rm -f bin/*.o bin/dlock-run
	rm -f $(SQL_EDITION)
	rm -rf build
else
$(error pg_config not found: install postgresql-server-dev-15, or set PG_CONFIG (make check installs what it needs))
endif
else
include $(PGXS)

# PGXS tracks no header dependencies of its own.
$(OBJS): src/dlock.h src/compat.h

ifneq ($(FULL_SCRIPT),)
all: $(FULL_SCRIPT)
# The update script: its source with the shared files spliced in.
$(UPDATE_SCRIPT): build/%: % src/sql/include.awk $(SQL_EDITION_SOURCES)
	@mkdir -p build
	{ echo '/* $@: generated by make from $< and the files it includes; do not edit */'; \
	  sed '1{/^\/\*.*\*\/$$/d}' $< | awk -f src/sql/include.awk; } >$@.tmp
	mv $@.tmp $@
# The check that the database has no other dlock (issue 26) goes first, so
# that it refuses before any object collides (src/sql/00_guard.sql, one
# text for both editions; the update script runs it again).
$(FULL_SCRIPT): $(FROM_SCRIPT) $(UPDATE_SCRIPT) src/sql/00_guard.sql
	{ echo '/* $@: generated by make from $^; do not edit */'; \
	  echo '-- from src/sql/00_guard.sql: at most one dlock per database'; \
	  cat src/sql/00_guard.sql; \
	  echo; \
	  sed '1{/^\/\*.*\*\/$$/d}' $(FROM_SCRIPT); \
	  echo; echo '-- from $(UPDATE_SCRIPT)'; \
	  sed -e '1{/^\/\*.*\*\/$$/d}' -e '/^-- complain if script is sourced/d' \
	      -e '/^\\echo /d' $(UPDATE_SCRIPT); } >$@
endif

# Each suite on its own, so that the "make check" driver can count them.
.PHONY: installcheck-regress installcheck-isolation installcheck-tap installcheck-pgtap
installcheck-regress: submake $(REGRESS_PREP)
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)
installcheck-isolation: submake
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)
installcheck-tap:
	$(prove_installcheck)
# pgTAP runs in a scratch database of its own, made and dropped here (as
# pg_regress does with contrib_regression): never in the database PGDATABASE
# names.  Its files roll back what they do.
PGTAP_DB = dlock_pgtap_regression
installcheck-pgtap:
	'$(bindir)/psql' -X -q -v ON_ERROR_STOP=1 -d postgres \
		-c 'DROP DATABASE IF EXISTS $(PGTAP_DB)' -c 'CREATE DATABASE $(PGTAP_DB)'
	pg_prove --verbose --ext .sql -d $(PGTAP_DB) -r test/pgtap; rc=$$?; \
		'$(bindir)/psql' -X -q -d postgres -c 'DROP DATABASE $(PGTAP_DB)' || rc=1; \
		exit $$rc

installcheck: installcheck-pgtap

# dlock-run, the command-line client, has its own Makefile in bin/.
.PHONY: all-bin install-bin-dir uninstall-bin-dir clean-bin-dir install-links uninstall-links
all: all-bin
all-bin:
	$(MAKE) -C bin PG_CONFIG=$(PG_CONFIG) all
install: install-bin-dir
install-bin-dir:
	$(MAKE) -C bin PG_CONFIG=$(PG_CONFIG) install
uninstall: uninstall-bin-dir
uninstall-bin-dir:
	$(MAKE) -C bin PG_CONFIG=$(PG_CONFIG) uninstall
clean: clean-bin-dir
clean-bin-dir:
	$(MAKE) -C bin PG_CONFIG=$(PG_CONFIG) clean
install-links uninstall-links:
	$(MAKE) -C bin PG_CONFIG=$(PG_CONFIG) $@

endif
endif

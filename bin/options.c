/*-------------------------------------------------------------------------
 *
 * options.c
 *		dlock-run's command line and --help
 *
 * Options are only read here; DURATION options are interval text that the
 * server reads later (ReadDuration in conn.c), so that dlock-run accepts
 * exactly what dlock_acquire() accepts.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock-run.h"

Options		opts;

/*
 * Usage: the --help text.  The man page (bin/dlock-run.1) says the same at
 * more length; change both together.
 */
static void
Usage(void)
{
	printf("%s runs a command while it holds a dlock lease: flock(1) for every machine\n"
		   "that shares one PostgreSQL database with the dlock extension.\n\n", progname);
	printf("Usage:\n"
		   "  %s [OPTION]... --name=NAME --ttl=DURATION [--] COMMAND [ARG]...\n\n", progname);
	printf("Lease options:\n"
		   "      --name=NAME              the lock name (1 to 255 bytes)\n"
		   "      --ttl=DURATION           the lease's length; renewed while COMMAND runs\n"
		   "  -w, --wait=DURATION          wait this long for a busy lease (default 0: do not wait)\n"
		   "      --min-hold=DURATION      keep the name from everybody until DURATION after the\n"
		   "                               acquisition, also when COMMAND ends sooner (at most\n"
		   "                               the TTL; dlock 1.2)\n"
		   "      --owner=TEXT             owner label stored with the lease, sent as\n"
		   "                               TEXT:PID:RANDOM, unique to this run (default: none)\n"
		   "      --renew-every=DURATION   renew this often (default: a third of the TTL; shorter\n"
		   "                               than the TTL minus its safety margin, a tenth of it;\n"
		   "                               0: never, COMMAND is stopped when the TTL runs out)\n"
		   "      --schema=SCHEMA          the schema dlock is installed in (default: search_path)\n\n");
	printf("Command options:\n"
		   "  -E, --conflict-exit-code=N   exit status when the lease stays busy (default %d)\n"
		   "      --lost-exit-code=N       exit status when the lease is lost (default %d)\n"
		   "  -s, --signal=SIGNAL          signal COMMAND gets when the lease is lost or its\n"
		   "                               deadline passes (default TERM)\n"
		   "  -k, --kill-after=DURATION    then send KILL to COMMAND and every process it started\n"
		   "                               if any still runs after DURATION (default %s; 0: never)\n"
		   "      --foreground             keep COMMAND in dlock-run's process group, for\n"
		   "                               commands that read the terminal\n"
		   "  -v, --verbose                report what happens to the lease on stderr\n\n",
		   EXIT_BUSY_DEFAULT, EXIT_LOST_DEFAULT, DEFAULT_KILL_AFTER);
	printf("Connection options (default: the libpq environment, PGHOST, PGSERVICE, ...):\n"
		   "  -d, --dbname=CONNINFO        database name or connection string; several hosts\n"
		   "                               with target_session_attrs=read-write follow a failover\n"
		   "  -h, --host=HOSTNAME          database server host or socket directory\n"
		   "  -p, --port=PORT              database server port\n"
		   "  -U, --username=USERNAME      database user name\n\n");
	printf("Other options:\n"
		   "  -V, --version                output version information, then exit\n"
		   "  -?, --help                   show this help, then exit\n\n");
	printf("DURATION is PostgreSQL interval text, read by the server: 30s, 90, 5min, '1 hour'.\n\n");
	printf("COMMAND runs with DLOCK_NAME and DLOCK_TOKEN in its environment.  The lease\n"
		   "counts as lost when a renewal has not succeeded by its deadline: the time the\n"
		   "last successful renewal was sent, plus the TTL, minus a margin of a tenth of\n"
		   "the TTL (at most 5 s plus a thousandth of the TTL).\n\n");
	printf("Exit status:\n"
		   "  COMMAND's own   COMMAND ran and the lease was held throughout (128+N if\n"
		   "                  signal N ended COMMAND)\n"
		   "  %-3d             the lease was lost, or may have been, while COMMAND ran\n"
		   "                  (taken over, expired, renewal unreachable past the deadline,\n"
		   "                  release said it was no longer held), even if COMMAND succeeded\n"
		   "  %-3d             the lease stayed busy; COMMAND did not run (-E)\n"
		   "  %-3d             bad usage; COMMAND did not run\n"
		   "  %-3d             the database or dlock could not be used before COMMAND started\n"
		   "  %-3d             a local failure (fork, pipe, poll)\n"
		   "  126, 127        COMMAND could not be executed, or was not found\n"
		   "  128+N           signal N interrupted dlock-run before COMMAND started\n",
		   EXIT_LOST_DEFAULT, EXIT_BUSY_DEFAULT, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_OSERR);
}

/*
 * ParseExitCode: an exit status, 0 to 255.
 */
static int
ParseExitCode(const char *option, const char *arg)
{
	char	   *end;
	long		n;

	errno = 0;
	n = strtol(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || n < 0 || n > 255)
		UsageError("invalid value \"%s\" for option %s: must be an exit status from 0 to 255",
				   arg, option);
	return (int) n;
}

/*
 * HelpOrVersionFirst: like PostgreSQL's own programs, --help (-?) or
 * --version (-V) as the first argument answers and exits at once.
 */
static void
HelpOrVersionFirst(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-?") == 0))
	{
		Usage();
		exit(0);
	}
	if (argc > 1 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0))
	{
		printf("%s (dlock) %s\n", progname, DLOCK_VERSION);
		exit(0);
	}
}

/*
 * ParseOptions: fill in opts from the command line; exit on bad usage.
 *
 * Longer than most functions here because it is one switch over the
 * option table, which reads best in one place.
 */
void
ParseOptions(int argc, char **argv)
{
	enum
	{
		OPT_NAME = 256,
		OPT_TTL,
		OPT_MIN_HOLD,
		OPT_OWNER,
		OPT_RENEW_EVERY,
		OPT_SCHEMA,
		OPT_LOST_EXIT_CODE,
		OPT_FOREGROUND,
		OPT_HELP
	};
	static const struct option long_options[] = {
		{"dbname", required_argument, NULL, 'd'},
		{"host", required_argument, NULL, 'h'},
		{"port", required_argument, NULL, 'p'},
		{"username", required_argument, NULL, 'U'},
		{"name", required_argument, NULL, OPT_NAME},
		{"ttl", required_argument, NULL, OPT_TTL},
		{"wait", required_argument, NULL, 'w'},
		{"min-hold", required_argument, NULL, OPT_MIN_HOLD},
		{"owner", required_argument, NULL, OPT_OWNER},
		{"renew-every", required_argument, NULL, OPT_RENEW_EVERY},
		{"schema", required_argument, NULL, OPT_SCHEMA},
		{"conflict-exit-code", required_argument, NULL, 'E'},
		{"lost-exit-code", required_argument, NULL, OPT_LOST_EXIT_CODE},
		{"signal", required_argument, NULL, 's'},
		{"kill-after", required_argument, NULL, 'k'},
		{"foreground", no_argument, NULL, OPT_FOREGROUND},
		{"verbose", no_argument, NULL, 'v'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, OPT_HELP},
		{NULL, 0, NULL, 0}
	};
	int			c;

	opts.wait = "0";
	opts.kill_after = DEFAULT_KILL_AFTER;
	opts.conflict_exit_code = EXIT_BUSY_DEFAULT;
	opts.lost_exit_code = EXIT_LOST_DEFAULT;
	opts.lost_signal = SIGTERM;

	HelpOrVersionFirst(argc, argv);

	/* "+": options end at the first non-option, which is the command */
	while ((c = getopt_long(argc, argv, "+d:h:p:U:w:E:s:k:vV?", long_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				opts.dbname = optarg;
				break;
			case 'h':
				opts.host = optarg;
				break;
			case 'p':
				opts.port = optarg;
				break;
			case 'U':
				opts.user = optarg;
				break;
			case OPT_NAME:
				opts.name = optarg;
				break;
			case OPT_TTL:
				opts.ttl = optarg;
				break;
			case 'w':
				opts.wait = optarg;
				break;
			case OPT_MIN_HOLD:
				opts.min_hold = optarg;
				break;
			case OPT_OWNER:
				opts.owner = optarg;
				break;
			case OPT_RENEW_EVERY:
				opts.renew_every = optarg;
				break;
			case OPT_SCHEMA:
				opts.schema = optarg;
				break;
			case 'E':
				opts.conflict_exit_code = ParseExitCode("-E/--conflict-exit-code", optarg);
				break;
			case OPT_LOST_EXIT_CODE:
				opts.lost_exit_code = ParseExitCode("--lost-exit-code", optarg);
				break;
			case 's':
				opts.lost_signal = ParseSignal(optarg);
				if (opts.lost_signal < 0)
					UsageError("invalid value \"%s\" for option -s/--signal: not a signal", optarg);
				/* the lease-lost signal must end the command by default */
				if (opts.lost_signal == SIGSTOP || IsStopSignal(opts.lost_signal) ||
					opts.lost_signal == SIGCONT || opts.lost_signal == SIGCHLD ||
					opts.lost_signal == SIGURG || opts.lost_signal == SIGWINCH)
					UsageError("invalid value \"%s\" for option -s/--signal: it does not end a process",
							   optarg);
				break;
			case 'k':
				opts.kill_after = optarg;
				break;
			case OPT_FOREGROUND:
				opts.foreground = true;
				break;
			case 'v':
				opts.verbose = true;
				verbose = true;
				break;
			case 'V':
				printf("%s (dlock) %s\n", progname, DLOCK_VERSION);
				exit(0);
			case OPT_HELP:
				Usage();
				exit(0);
			case '?':
				/* as psql does: -? is help, anything else getopt complained about */
				if (optind <= argc && strcmp(argv[optind - 1], "-?") == 0)
				{
					Usage();
					exit(0);
				}
				fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
				exit(EXIT_USAGE);
			default:
				UsageError("invalid option");
		}
	}

	if (opts.name == NULL)
		UsageError("no lock name given: --name is required");
	if (opts.ttl == NULL)
		UsageError("no lease length given: --ttl is required");
	if (optind >= argc)
		UsageError("no command given");
	opts.command = argv + optind;
}

/*-------------------------------------------------------------------------
 *
 * dlock-run.c
 *		flock(1) for a whole fleet: run a command while holding a dlock lease
 *
 * dlock-run takes the lease on a lock name with dlock_acquire(), runs the
 * command as its child with DLOCK_NAME and DLOCK_TOKEN in the environment,
 * renews the lease on a timer while the command runs, and releases it when
 * the command has ended.  If the lease is lost while the command runs, the
 * command is signalled and dlock-run says so and exits non-zero.
 *
 * Protocol (the one thing to keep in mind when changing this file):
 *
 * - Processes.  libpq is used in this process only.  The command is forked
 *   and exec'd at once; unless --foreground, it leads a process group of its
 *   own, and every signal dlock-run sends goes to that whole group.  On Linux
 *   dlock-run is a child subreaper (orphans of the command are reparented to
 *   it and reaped by it), and the command gets the lease-lost signal if
 *   dlock-run itself dies.  dlock-run does not exit while anything is left
 *   in the command's process group: it signals what the command left behind,
 *   keeps the lease renewed meanwhile, and releases only afterwards.
 *
 * - Signals.  A handler writes each signal number into a non-blocking
 *   self-pipe; the only place that waits (WaitEvent) polls that pipe
 *   together with the server socket and a deadline, and handles the signals
 *   that arrived: SIGCHLD reaps, the forwarded signals go to the command
 *   while it runs, and before (or after) it runs they interrupt dlock-run.
 *
 * - Time.  All local timing uses CLOCK_MONOTONIC.  The lease's local
 *   deadline is the moment the last successful acquire or renew was *sent*
 *   plus the TTL: the server read its clock_timestamp() later than that, so
 *   (clock rates aside) the lease on the server never expires before the
 *   local deadline.  Past the deadline without a successful renewal, the
 *   lease counts as lost.
 *
 * - Queries.  Every statement is sent with PQsendQueryParams in autocommit
 *   mode, every value as a parameter (the only text put into a statement is
 *   the --schema name, quoted by PQescapeIdentifier), and waited for
 *   through WaitEvent with a deadline, so that a hung server never holds up
 *   signal forwarding or the lease-lost decision.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "libpq-fe.h"

#ifndef DLOCK_VERSION
#define DLOCK_VERSION "unknown"
#endif

/* Exit statuses of dlock-run itself (sysexits.h numbers, spelled out) */
#define EXIT_USAGE			64	/* EX_USAGE: bad option or argument */
#define EXIT_UNAVAILABLE	69	/* EX_UNAVAILABLE: no server, no dlock */
#define EXIT_LOST_DEFAULT	70	/* EX_SOFTWARE: lease lost (--lost-exit-code) */
#define EXIT_OSERR			71	/* EX_OSERR: fork, pipe or poll failed */
#define EXIT_BUSY_DEFAULT	75	/* EX_TEMPFAIL: busy (-E) */
#define EXIT_CANNOT_EXEC	126 /* as in POSIX shells */
#define EXIT_NOT_FOUND		127

#define DEFAULT_KILL_AFTER	"10s"

/* how long past --wait to wait for the server to answer an acquire */
#define ACQUIRE_SLACK		30.0
/* the longest pause between two failed renewal attempts */
#define RETRY_DELAY_MAX		1.0
/* how long to wait for the answer to a query cancel */
#define CANCEL_WAIT			5.0
/* how long what the command left in its process group may take to end */
#define DRAIN_GRACE			0.5
/* how often to look whether the command's process group has emptied */
#define DRAIN_POLL			0.05
/* how long the command may take to end when dlock-run must give up */
#define DIE_GRACE			10.0

#define NO_DEADLINE			(-1.0)

/* The byte written to the self-pipe: signal number, plus this if the kernel sent it */
#define SIGNAL_FROM_KERNEL	0x80

typedef enum QueryOutcome
{
	QUERY_OK,					/* a result with tuples */
	QUERY_ERROR,				/* the server reported an error */
	QUERY_BROKEN,				/* the connection is gone */
	QUERY_TIMEOUT,				/* no answer by the deadline */
	QUERY_INTERRUPTED			/* a signal interrupted dlock-run */
} QueryOutcome;

typedef struct Options
{
	const char *dbname;			/* -d: a database name or connection string */
	const char *host;
	const char *port;
	const char *user;
	const char *name;
	const char *ttl;			/* DURATION options, as interval text */
	const char *wait;
	const char *renew_every;
	const char *kill_after;
	const char *owner;
	const char *schema;
	int			conflict_exit_code;
	int			lost_exit_code;
	int			lost_signal;
	bool		foreground;
	bool		verbose;
	char	  **command;
} Options;

typedef struct Lease
{
	char		token[32];		/* as the server printed it */
	bool		held;			/* as far as dlock-run knows */
	bool		lost;			/* lost before the command ended */
	double		deadline;		/* held at least until then (monotonic) */
	double		next_renew;		/* when to renew next (monotonic) */
	int			failures;		/* failed renewal attempts in a row */
	char		last_error[512];	/* why the last one failed */
} Lease;

typedef struct SignalName
{
	const char *name;
	int			signo;
} SignalName;

static const SignalName signal_names[] = {
	{"HUP", SIGHUP},
	{"INT", SIGINT},
	{"QUIT", SIGQUIT},
	{"KILL", SIGKILL},
	{"USR1", SIGUSR1},
	{"USR2", SIGUSR2},
	{"ALRM", SIGALRM},
	{"TERM", SIGTERM},
	{NULL, 0}
};

/* Signals passed on to the command while it runs */
static const int forwarded_signals[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2
};

#define lengthof(array) (sizeof(array) / sizeof((array)[0]))

static const char *progname = "dlock-run";
static Options opts;
static Lease lease;
static PGconn *conn = NULL;

/* the statements that call dlock (see BuildQueries) */
static char sql_acquire[1024];
static char sql_renew[1024];
static char sql_release[1024];

/* durations in seconds, read by the server */
static double ttl_secs;
static double wait_secs;
static double renew_secs;
static double kill_secs;

static int	signal_pipe[2] = {-1, -1};
static bool ignored_at_start[NSIG];

/* the command: set up by StartCommand, updated by ReapChildren */
static pid_t child_pid = 0;
static bool child_running = false;
static int	child_status = 0;
static bool supervising = false;	/* between fork and the command's end */

/* the first signal that arrived while no command was running */
static int	interrupt_signal = 0;

static void Log(const char *level, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
static void Verbose(const char *fmt,...)
			__attribute__((format(printf, 1, 2)));
static void UsageError(const char *fmt,...)
			__attribute__((format(printf, 1, 2), noreturn));
static void ExitInterrupted(void) __attribute__((noreturn));
static void Die(int code) __attribute__((noreturn));


/*
 * Log: one message on stderr, "dlock-run: LEVEL: text" (LEVEL may be NULL).
 */
static void
Log(const char *level, const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: ", progname);
	if (level != NULL)
		fprintf(stderr, "%s: ", level);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * Verbose: a message for --verbose only.
 */
static void
Verbose(const char *fmt,...)
{
	va_list		ap;

	if (!opts.verbose)
		return;
	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * Usage: the --help text.
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
		   "      --owner=TEXT             owner label stored with the lease (default: none)\n"
		   "      --renew-every=DURATION   renew this often (default: a third of the TTL)\n"
		   "      --schema=SCHEMA          the schema dlock is installed in (default: search_path)\n\n");
	printf("Command options:\n"
		   "  -E, --conflict-exit-code=N   exit status when the lease stays busy (default %d)\n"
		   "      --lost-exit-code=N       exit status when the lease is lost (default %d)\n"
		   "  -s, --signal=SIGNAL          signal COMMAND gets when the lease is lost (default TERM)\n"
		   "  -k, --kill-after=DURATION    then send KILL if it still runs after DURATION\n"
		   "                               (default %s; 0: never)\n"
		   "      --foreground             keep COMMAND in dlock-run's process group, for\n"
		   "                               commands that read the terminal\n"
		   "  -v, --verbose                report what happens to the lease on stderr\n\n",
		   EXIT_BUSY_DEFAULT, EXIT_LOST_DEFAULT, DEFAULT_KILL_AFTER);
	printf("Connection options (default: the libpq environment, PGHOST, PGSERVICE, ...):\n"
		   "  -d, --dbname=CONNINFO        database name or connection string\n"
		   "  -h, --host=HOSTNAME          database server host or socket directory\n"
		   "  -p, --port=PORT              database server port\n"
		   "  -U, --username=USERNAME      database user name\n\n");
	printf("Other options:\n"
		   "  -V, --version                output version information, then exit\n"
		   "  -?, --help                   show this help, then exit\n\n");
	printf("DURATION is PostgreSQL interval text, read by the server: 30s, 90, 5min, '1 hour'.\n\n");
	printf("COMMAND runs with DLOCK_NAME and DLOCK_TOKEN in its environment.\n\n");
	printf("Exit status: COMMAND's own (128+N if signal N ended it); %d when the lease\n"
		   "stays busy; %d when the lease is lost before COMMAND ends; %d on bad usage;\n"
		   "%d when the server or dlock cannot be used; 128+N when signal N interrupts\n"
		   "dlock-run before COMMAND starts.\n",
		   EXIT_BUSY_DEFAULT, EXIT_LOST_DEFAULT, EXIT_USAGE, EXIT_UNAVAILABLE);
}

/*
 * UsageError: complain about the command line and exit with EX_USAGE.
 */
static void
UsageError(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: error: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
	exit(EXIT_USAGE);
}

/*
 * Now: seconds on the monotonic clock.
 */
static double
Now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/*
 * Earliest: the earlier of two deadlines, NO_DEADLINE being the latest.
 */
static double
Earliest(double a, double b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

/*
 * TimeoutMs: milliseconds from now until deadline, for poll(); -1 if none.
 */
static int
TimeoutMs(double deadline)
{
	double		left;

	if (deadline < 0)
		return -1;
	left = deadline - Now();
	if (left <= 0)
		return 0;
	if (left > 3600.0)
		return 3600 * 1000;
	return (int) (left * 1000.0) + 1;
}

/*
 * CopyMessage: a malloc'd copy of a libpq message without its trailing
 * newlines.
 */
static char *
CopyMessage(const char *msg)
{
	char	   *copy;
	size_t		len;

	if (msg == NULL || *msg == '\0')
		msg = "(no message)";
	copy = strdup(msg);
	if (copy == NULL)
	{
		Log("error", "out of memory");
		Die(EXIT_OSERR);
	}
	len = strlen(copy);
	while (len > 0 && (copy[len - 1] == '\n' || copy[len - 1] == ' '))
		copy[--len] = '\0';
	return copy;
}

/*
 * SignalNameOf: "SIGTERM" for SIGTERM.
 */
static const char *
SignalNameOf(int signo)
{
	static char buf[32];
	int			i;

	for (i = 0; signal_names[i].name != NULL; i++)
	{
		if (signal_names[i].signo == signo)
		{
			snprintf(buf, sizeof(buf), "SIG%s", signal_names[i].name);
			return buf;
		}
	}
	snprintf(buf, sizeof(buf), "signal %d", signo);
	return buf;
}

/*
 * ParseSignal: "TERM", "SIGTERM", "term" or "15"; -1 if none of these.
 */
static int
ParseSignal(const char *arg)
{
	const char *p = arg;
	char	   *end;
	long		n;
	int			i;

	if (strncasecmp(p, "SIG", 3) == 0)
		p += 3;
	for (i = 0; signal_names[i].name != NULL; i++)
	{
		if (strcasecmp(p, signal_names[i].name) == 0)
			return signal_names[i].signo;
	}
	errno = 0;
	n = strtol(arg, &end, 10);
	if (errno == 0 && end != arg && *end == '\0' && n > 0 && n < NSIG)
		return (int) n;
	return -1;
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
 * ParseOptions: fill in opts from the command line; exit on bad usage.
 */
static void
ParseOptions(int argc, char **argv)
{
	enum
	{
		OPT_NAME = 256,
		OPT_TTL,
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

	/* like PostgreSQL's own programs: --help or -? first, then nothing else */
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
				break;
			case 'k':
				opts.kill_after = optarg;
				break;
			case OPT_FOREGROUND:
				opts.foreground = true;
				break;
			case 'v':
				opts.verbose = true;
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

/*
 * SignalHandler: note the signal in the self-pipe; WaitEvent handles it.
 */
static void
SignalHandler(int signo, siginfo_t *info, void *context)
{
	int			save_errno = errno;
	unsigned char b = (unsigned char) signo;
	ssize_t		rc;

	(void) context;
	if (info != NULL && info->si_code == SI_KERNEL)
		b |= SIGNAL_FROM_KERNEL;
	rc = write(signal_pipe[1], &b, 1);
	(void) rc;
	errno = save_errno;
}

/*
 * SetUpSignals: the self-pipe, and handlers for SIGCHLD and the forwarded
 * signals.  A forwarded signal that was ignored when dlock-run started (as
 * SIGINT is for a background job of a shell script) stays ignored, for
 * dlock-run and for the command.
 */
static void
SetUpSignals(void)
{
	struct sigaction sa;
	size_t		i;
	int			j;

	if (pipe(signal_pipe) != 0)
	{
		Log("error", "could not create pipe: %s", strerror(errno));
		exit(EXIT_OSERR);
	}
	for (j = 0; j < 2; j++)
	{
		fcntl(signal_pipe[j], F_SETFL, fcntl(signal_pipe[j], F_GETFL) | O_NONBLOCK);
		fcntl(signal_pipe[j], F_SETFD, FD_CLOEXEC);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = SignalHandler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);

	for (i = 0; i < lengthof(forwarded_signals); i++)
	{
		int			signo = forwarded_signals[i];
		struct sigaction old;

		if (sigaction(signo, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
		{
			ignored_at_start[signo] = true;
			continue;
		}
		sigaction(signo, &sa, NULL);
	}
	sa.sa_flags |= SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
}

/*
 * BlockSignals: block (true) or unblock (false) every signal we handle.
 */
static void
BlockSignals(bool block, sigset_t *old)
{
	sigset_t	set;
	size_t		i;

	if (!block)
	{
		sigprocmask(SIG_SETMASK, old, NULL);
		return;
	}
	sigemptyset(&set);
	for (i = 0; i < lengthof(forwarded_signals); i++)
		sigaddset(&set, forwarded_signals[i]);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, old);
}

/*
 * SignalCommand: send signo to the command (its whole process group unless
 * --foreground).
 */
static void
SignalCommand(int signo)
{
	if (child_pid <= 0)
		return;
	if (!opts.foreground)
	{
		if (kill(-child_pid, signo) == 0 || errno != ESRCH || !child_running)
			return;
	}
	if (child_running)
		kill(child_pid, signo);
}

/*
 * CommandAlive: is the command, or anything it left in its process group,
 * still running?
 */
static bool
CommandAlive(void)
{
	if (child_running)
		return true;
	if (opts.foreground || child_pid <= 0)
		return false;
	return kill(-child_pid, 0) == 0;
}

/*
 * ReapChildren: collect every child that has ended.  The command's status
 * is kept; orphans reparented to us (we are a subreaper) are just reaped.
 */
static void
ReapChildren(void)
{
	for (;;)
	{
		int			status;
		pid_t		pid = waitpid(-1, &status, WNOHANG);

		if (pid <= 0)
		{
			if (pid < 0 && errno == EINTR)
				continue;
			break;
		}
		if (pid == child_pid && child_running)
		{
			child_running = false;
			child_status = status;
		}
	}
}

/*
 * Die: exit after a local failure, never leaving the command behind: it gets
 * the lease-lost signal, then SIGKILL after --kill-after (or DIE_GRACE),
 * and is reaped.  Uses no libpq and no self-pipe.
 */
static void
Die(int code)
{
	if (supervising)
	{
		double		until = Now() + (kill_secs > 0 ? kill_secs : DIE_GRACE);
		struct timespec pause = {0, 50 * 1000 * 1000};

		supervising = false;
		SignalCommand(opts.lost_signal);
		while (CommandAlive() && Now() < until)
		{
			nanosleep(&pause, NULL);
			ReapChildren();
		}
		if (CommandAlive())
			SignalCommand(SIGKILL);
		while (child_running)
		{
			nanosleep(&pause, NULL);
			ReapChildren();
		}
	}
	exit(code);
}

/*
 * HandleSignals: act on every signal noted in the self-pipe.
 */
static void
HandleSignals(void)
{
	unsigned char buf[64];
	ssize_t		n;
	ssize_t		i;

	for (;;)
	{
		n = read(signal_pipe[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (i = 0; i < n; i++)
		{
			int			signo = buf[i] & ~SIGNAL_FROM_KERNEL;
			bool		from_kernel = (buf[i] & SIGNAL_FROM_KERNEL) != 0;

			if (signo == SIGCHLD)
				ReapChildren();
			else if (supervising)
			{
				/*
				 * With --foreground, a signal from the terminal reached the
				 * command already: it shares our process group.
				 */
				if (opts.foreground && from_kernel)
					continue;
				Verbose("passing %s on to the command", SignalNameOf(signo));
				SignalCommand(signo);
			}
			else if (interrupt_signal == 0)
				interrupt_signal = signo;
		}
	}
	ReapChildren();
}

/*
 * WaitEvent: wait until sock (if >= 0) is ready for events, a signal
 * arrives, or deadline passes (NO_DEADLINE: no limit).  Signals that
 * arrived are handled before it returns.  True if the socket is ready.
 */
static bool
WaitEvent(int sock, short events, double deadline)
{
	struct pollfd fds[2];
	nfds_t		nfds = 1;
	int			rc;

	fds[0].fd = signal_pipe[0];
	fds[0].events = POLLIN;
	fds[0].revents = 0;
	if (sock >= 0)
	{
		fds[1].fd = sock;
		fds[1].events = events;
		fds[1].revents = 0;
		nfds = 2;
	}
	rc = poll(fds, nfds, TimeoutMs(deadline));
	if (rc < 0 && errno != EINTR)
	{
		Log("error", "poll failed: %s", strerror(errno));
		Die(EXIT_OSERR);
	}
	HandleSignals();
	return rc > 0 && nfds == 2 && fds[1].revents != 0;
}

/*
 * Connect: open a connection, waiting until deadline at most.  On failure
 * returns NULL with *errmsg set (malloc'd).  If interruptible, a signal
 * that interrupts dlock-run ends the attempt too.
 */
static PGconn *
Connect(double deadline, bool interruptible, char **errmsg)
{
	const char *keywords[8];
	const char *values[8];
	int			n = 0;
	PGconn	   *c;
	PostgresPollingStatusType status = PGRES_POLLING_WRITING;
	PQconninfoOption *info;
	PQconninfoOption *o;

	*errmsg = NULL;

	/* the order of psql: a connection string in -d overrides -h, -p, -U */
	if (opts.host)
	{
		keywords[n] = "host";
		values[n++] = opts.host;
	}
	if (opts.port)
	{
		keywords[n] = "port";
		values[n++] = opts.port;
	}
	if (opts.user)
	{
		keywords[n] = "user";
		values[n++] = opts.user;
	}
	if (opts.dbname)
	{
		keywords[n] = "dbname";
		values[n++] = opts.dbname;
	}
	keywords[n] = "fallback_application_name";
	values[n++] = progname;
	keywords[n] = NULL;
	values[n] = NULL;

	c = PQconnectStartParams(keywords, values, 1);
	if (c == NULL)
	{
		*errmsg = CopyMessage("out of memory");
		return NULL;
	}

	/* connect_timeout (or PGCONNECT_TIMEOUT): libpq leaves it to us here */
	info = PQconninfo(c);
	for (o = info; o != NULL && o->keyword != NULL; o++)
	{
		if (strcmp(o->keyword, "connect_timeout") == 0 && o->val != NULL &&
			atoi(o->val) > 0)
			deadline = Earliest(deadline, Now() + atoi(o->val));
	}
	PQconninfoFree(info);

	while (status != PGRES_POLLING_OK && status != PGRES_POLLING_FAILED)
	{
		bool		ready;

		if (PQstatus(c) == CONNECTION_BAD)
		{
			status = PGRES_POLLING_FAILED;
			break;
		}
		if (PQsocket(c) < 0)
		{
			status = PQconnectPoll(c);
			continue;
		}
		ready = WaitEvent(PQsocket(c),
						  status == PGRES_POLLING_READING ? POLLIN : POLLOUT,
						  deadline);
		if (interruptible && interrupt_signal != 0)
		{
			*errmsg = CopyMessage("interrupted");
			PQfinish(c);
			return NULL;
		}
		if (!ready)
		{
			if (deadline >= 0 && Now() >= deadline)
			{
				char		buf[1024];

				snprintf(buf, sizeof(buf),
						 "connection to server at \"%s\", port %s failed: timeout expired",
						 PQhost(c) ? PQhost(c) : "", PQport(c) ? PQport(c) : "");
				*errmsg = CopyMessage(buf);
				PQfinish(c);
				return NULL;
			}
			continue;
		}
		status = PQconnectPoll(c);
	}
	if (status == PGRES_POLLING_FAILED || PQstatus(c) != CONNECTION_OK)
	{
		*errmsg = CopyMessage(PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	if (PQsetnonblocking(c, 1) != 0)
	{
		*errmsg = CopyMessage(PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	return c;
}

/*
 * SendCancel: ask the server to cancel the query in progress on c.
 */
static void
SendCancel(PGconn *c)
{
	PGcancel   *cancel = PQgetCancel(c);
	char		errbuf[256];

	if (cancel == NULL)
		return;
	(void) PQcancel(cancel, errbuf, sizeof(errbuf));
	PQfreeCancel(cancel);
}

/*
 * RunQuery: send one statement with text parameters and wait for its
 * result until deadline.  On QUERY_OK *result holds tuples; on
 * QUERY_ERROR *result holds the error (for its SQLSTATE) and *errmsg its
 * primary message; on the other outcomes *errmsg says what happened.  The
 * caller clears *result and frees *errmsg.  After QUERY_BROKEN or
 * QUERY_TIMEOUT the connection is unusable.
 */
static QueryOutcome
RunQuery(PGconn *c, const char *sql, int nparams, const char *const *params,
		 double deadline, bool interruptible, PGresult **result, char **errmsg)
{
	PGresult   *res = NULL;
	PGresult   *r;
	bool		canceled = false;
	int			rc;

	*result = NULL;
	*errmsg = NULL;

	if (!PQsendQueryParams(c, sql, nparams, NULL, params, NULL, NULL, 0))
	{
		*errmsg = CopyMessage(PQerrorMessage(c));
		return QUERY_BROKEN;
	}
	while ((rc = PQflush(c)) != 0)
	{
		if (rc < 0)
		{
			*errmsg = CopyMessage(PQerrorMessage(c));
			return QUERY_BROKEN;
		}
		if (!WaitEvent(PQsocket(c), POLLOUT, deadline) &&
			deadline >= 0 && Now() >= deadline)
		{
			*errmsg = CopyMessage("no answer from the server in time");
			return QUERY_TIMEOUT;
		}
	}

	/* collect the results; PQgetResult is only called when it cannot block */
	for (;;)
	{
		while (PQisBusy(c))
		{
			bool		ready = WaitEvent(PQsocket(c), POLLIN, deadline);

			if (interruptible && interrupt_signal != 0 && !canceled)
			{
				SendCancel(c);
				canceled = true;
				deadline = Now() + CANCEL_WAIT;
			}
			if (!ready)
			{
				if (deadline >= 0 && Now() >= deadline)
				{
					if (res != NULL)
						PQclear(res);
					*errmsg = CopyMessage(canceled ? "interrupted" :
										  "no answer from the server in time");
					return canceled ? QUERY_INTERRUPTED : QUERY_TIMEOUT;
				}
				continue;
			}
			if (!PQconsumeInput(c))
			{
				if (res != NULL)
					PQclear(res);
				*errmsg = CopyMessage(PQerrorMessage(c));
				return QUERY_BROKEN;
			}
		}
		r = PQgetResult(c);
		if (r == NULL)
			break;
		if (res == NULL)
			res = r;
		else
			PQclear(r);
	}
	if (res == NULL)
	{
		*errmsg = CopyMessage(PQerrorMessage(c));
		return QUERY_BROKEN;
	}
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
	{
		*result = res;
		return QUERY_OK;
	}
	if (PQresultStatus(res) == PGRES_TUPLES_OK)
	{
		PQclear(res);
		*errmsg = CopyMessage("unexpected result from the server");
		return QUERY_ERROR;
	}
	*result = res;
	*errmsg = CopyMessage(PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) ?
						  PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) :
						  PQresultErrorMessage(res));
	if (PQstatus(c) == CONNECTION_BAD)
		return QUERY_BROKEN;
	return canceled ? QUERY_INTERRUPTED : QUERY_ERROR;
}

/*
 * SqlState: the SQLSTATE of an error result, or "".
 */
static const char *
SqlState(const PGresult *res)
{
	const char *s = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	return s ? s : "";
}

/*
 * ExitInterrupted: a signal interrupted dlock-run before the command ran.
 */
static void
ExitInterrupted(void)
{
	Verbose("interrupted by %s", SignalNameOf(interrupt_signal));
	exit(128 + interrupt_signal);
}

/*
 * BuildQueries: the statements that call dlock, its functions qualified
 * with --schema (quoted as an identifier by libpq) if given, or else found
 * through search_path.  Only the schema name goes into the text; every value
 * is a parameter.
 */
static void
BuildQueries(void)
{
	char	   *quoted = NULL;
	const char *prefix = "";
	const char *dot = "";
	size_t		longest;

	if (opts.schema != NULL)
	{
		quoted = PQescapeIdentifier(conn, opts.schema, strlen(opts.schema));
		if (quoted == NULL)
			UsageError("invalid value \"%s\" for option --schema: %s",
					   opts.schema, PQerrorMessage(conn));
		prefix = quoted;
		dot = ".";
	}
	longest = (size_t) snprintf(sql_acquire, sizeof(sql_acquire),
								"SELECT %s%sdlock_acquire($1::pg_catalog.text, "
								"$2::pg_catalog.interval, $3::pg_catalog.interval, "
								"$4::pg_catalog.text)", prefix, dot);
	snprintf(sql_renew, sizeof(sql_renew),
			 "SELECT %s%sdlock_renew($1::pg_catalog.text, $2::pg_catalog.int8, "
			 "$3::pg_catalog.interval)", prefix, dot);
	snprintf(sql_release, sizeof(sql_release),
			 "SELECT %s%sdlock_release($1::pg_catalog.text, $2::pg_catalog.int8)",
			 prefix, dot);
	if (quoted != NULL)
		PQfreemem(quoted);
	/* the acquire is the longest of the three */
	if (longest >= sizeof(sql_acquire))
		UsageError("invalid value \"%s\" for option --schema: too long", opts.schema);
}

/*
 * ReadDuration: the length of a DURATION in seconds, as the server reads
 * the interval (months and days counted on the calendar from now).
 * Exits on a bad value.
 */
static double
ReadDuration(const char *option, const char *text)
{
	const char *params[1];
	PGresult   *res;
	char	   *errmsg;
	double		secs;
	QueryOutcome outcome;

	params[0] = text;
	outcome = RunQuery(conn,
					   "SELECT pg_catalog.date_part('epoch', "
					   "(pg_catalog.now() OPERATOR(pg_catalog.+) $1::pg_catalog.interval) "
					   "OPERATOR(pg_catalog.-) pg_catalog.now())",
					   1, params, NO_DEADLINE, true, &res, &errmsg);
	if (outcome == QUERY_INTERRUPTED || interrupt_signal != 0)
		ExitInterrupted();
	if (outcome == QUERY_ERROR && strncmp(SqlState(res), "22", 2) == 0)
		UsageError("invalid value \"%s\" for option %s: %s", text, option, errmsg);
	if (outcome != QUERY_OK)
	{
		Log("error", "could not read option %s: %s", option, errmsg);
		exit(EXIT_UNAVAILABLE);
	}
	secs = strtod(PQgetvalue(res, 0, 0), NULL);
	PQclear(res);
	return secs;
}

/*
 * ReportAcquireError: the acquire failed; say why, with a hint if we can.
 */
static void
ReportAcquireError(const char *sqlstate, const char *errmsg)
{
	Log("error", "could not acquire the lease on \"%s\": %s", opts.name, errmsg);
	if (strcmp(sqlstate, "42883") == 0)
		fprintf(stderr, "%s: hint: Is the dlock extension installed in this database? "
				"If it is in a schema outside search_path, use --schema.\n", progname);
	else if (strcmp(sqlstate, "25006") == 0)
		fprintf(stderr, "%s: hint: This server is a standby or read-only; "
				"connect to the primary (target_session_attrs=read-write).\n", progname);
}

/*
 * Acquire: take the lease, or exit (busy, error, interrupted).
 */
static void
Acquire(void)
{
	const char *params[4];
	PGresult   *res;
	char	   *errmsg;
	double		sent;
	QueryOutcome outcome;
	const char *sqlstate;

	params[0] = opts.name;
	params[1] = opts.ttl;
	params[2] = opts.wait;
	params[3] = opts.owner;		/* NULL: anonymous */

	sent = Now();
	outcome = RunQuery(conn, sql_acquire, 4, params, sent + wait_secs + ACQUIRE_SLACK,
					   true, &res, &errmsg);
	sqlstate = SqlState(res);

	if (outcome == QUERY_OK)
	{
		if (PQgetisnull(res, 0, 0))
		{
			PQclear(res);
			if (interrupt_signal != 0)
				ExitInterrupted();
			Verbose("lock \"%s\" is busy", opts.name);
			exit(opts.conflict_exit_code);
		}
		snprintf(lease.token, sizeof(lease.token), "%s", PQgetvalue(res, 0, 0));
		PQclear(res);
		lease.held = true;
		lease.deadline = sent + ttl_secs;
		lease.next_renew = sent + renew_secs;
		Verbose("acquired the lease on \"%s\" with token %s", opts.name, lease.token);
		return;
	}

	if (outcome == QUERY_INTERRUPTED || interrupt_signal != 0)
		ExitInterrupted();
	if (outcome == QUERY_ERROR &&
		(strcmp(sqlstate, "55P03") == 0 || strcmp(sqlstate, "57014") == 0))
	{
		/* lock_timeout or statement_timeout ended the wait: still busy */
		Verbose("lock \"%s\" is busy: %s", opts.name, errmsg);
		exit(opts.conflict_exit_code);
	}
	if (outcome == QUERY_ERROR && strncmp(sqlstate, "22", 2) == 0)
	{
		/* the server rejected an argument: a name or duration out of range */
		Log("error", "could not acquire the lease on \"%s\": %s", opts.name, errmsg);
		fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
		exit(EXIT_USAGE);
	}
	ReportAcquireError(sqlstate, errmsg);
	exit(EXIT_UNAVAILABLE);
}

/*
 * LeaseLost: the lease is gone (or may be); say so, and signal the command.
 */
static void
LeaseLost(const char *why, double *kill_at)
{
	lease.held = false;
	lease.lost = true;
	if (!CommandAlive())
	{
		Log("error", "lost the lease on \"%s\" (token %s): %s",
			opts.name, lease.token, why);
		return;
	}
	Log("error", "lost the lease on \"%s\" (token %s) while the command runs: %s; "
		"sending %s to the command", opts.name, lease.token, why,
		SignalNameOf(opts.lost_signal));
	SignalCommand(opts.lost_signal);
	if (*kill_at < 0 && kill_secs > 0)
		*kill_at = Now() + kill_secs;
}

/*
 * CheckDeadline: past the lease's local deadline without a successful
 * renewal, the lease may have expired on the server: it counts as lost.
 */
static void
CheckDeadline(double *kill_at)
{
	char		why[1024];

	if (!lease.held || Now() < lease.deadline)
		return;
	if (lease.failures > 0)
		snprintf(why, sizeof(why),
				 "no renewal succeeded before the lease expired (last error: %s)",
				 lease.last_error);
	else
		snprintf(why, sizeof(why), "no renewal succeeded before the lease expired");
	LeaseLost(why, kill_at);
}

/*
 * DropConnection: forget a connection that is broken or busy with a query
 * we gave up on.
 */
static void
DropConnection(void)
{
	if (conn != NULL)
		PQfinish(conn);
	conn = NULL;
}

/*
 * EnsureConnection: (re)connect if needed, until deadline at most.  False
 * with *errmsg set if that failed.
 */
static bool
EnsureConnection(double deadline, bool interruptible, char **errmsg)
{
	*errmsg = NULL;
	if (conn != NULL && PQstatus(conn) == CONNECTION_OK)
		return true;
	DropConnection();
	conn = Connect(deadline, interruptible, errmsg);
	if (conn == NULL)
		return false;
	return true;
}

/*
 * RenewOnce: one renewal attempt.  Success moves the deadline; false from
 * the server means the lease is lost; an error or no answer is retried
 * until the deadline.
 */
static void
RenewOnce(double *kill_at)
{
	const char *params[3];
	PGresult   *res = NULL;
	char	   *errmsg = NULL;
	double		sent;
	double		attempt_deadline;
	QueryOutcome outcome;
	double		retry = renew_secs < RETRY_DELAY_MAX ? renew_secs : RETRY_DELAY_MAX;

	attempt_deadline = Earliest(lease.deadline,
								Now() + (renew_secs > 1.0 ? renew_secs : 1.0));

	if (!EnsureConnection(attempt_deadline, false, &errmsg))
		outcome = QUERY_BROKEN;
	else
	{
		params[0] = opts.name;
		params[1] = lease.token;
		params[2] = opts.ttl;
		sent = Now();
		outcome = RunQuery(conn, sql_renew, 3, params, attempt_deadline, false,
						   &res, &errmsg);
		if (outcome == QUERY_OK)
		{
			bool		renewed = strcmp(PQgetvalue(res, 0, 0), "t") == 0;

			PQclear(res);
			if (!renewed)
			{
				LeaseLost("the server says the lease is no longer held by this token "
						  "(it expired or was released or taken over)", kill_at);
				return;
			}
			if (lease.failures > 0)
				Log("warning", "renewed the lease on \"%s\" again after %d failed attempt%s",
					opts.name, lease.failures, lease.failures == 1 ? "" : "s");
			lease.failures = 0;
			lease.deadline = sent + ttl_secs;
			lease.next_renew = sent + renew_secs;
			return;
		}
	}

	/* the attempt failed: retry until the lease's deadline */
	if (lease.failures == 0)
		Log("warning", "could not renew the lease on \"%s\": %s; retrying until it expires",
			opts.name, errmsg);
	lease.failures++;
	snprintf(lease.last_error, sizeof(lease.last_error), "%s", errmsg);
	free(errmsg);
	if (res)
		PQclear(res);
	if (outcome != QUERY_ERROR)
		DropConnection();
	if (lease.failures == 1 && outcome != QUERY_ERROR)
		lease.next_renew = Now();	/* a stale connection: retry at once */
	else
		lease.next_renew = Now() + retry;
	CheckDeadline(kill_at);
}

/*
 * StartCommand: fork and exec the command with DLOCK_NAME and DLOCK_TOKEN
 * in its environment.
 */
static void
StartCommand(void)
{
	sigset_t	old;
	pid_t		parent = getpid();
	pid_t		pid;
	size_t		i;

	if (setenv("DLOCK_NAME", opts.name, 1) != 0 ||
		setenv("DLOCK_TOKEN", lease.token, 1) != 0)
	{
		Log("error", "could not set the environment: %s", strerror(errno));
		exit(EXIT_OSERR);
	}
#if defined(__linux__) && defined(PR_SET_CHILD_SUBREAPER)
	(void) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#endif

	fflush(NULL);
	BlockSignals(true, &old);
	pid = fork();
	if (pid < 0)
	{
		BlockSignals(false, &old);
		Log("error", "could not start the command: %s", strerror(errno));
		return;
	}
	if (pid == 0)
	{
		/* the child: restore what the command should inherit, then exec */
		for (i = 0; i < lengthof(forwarded_signals); i++)
		{
			if (!ignored_at_start[forwarded_signals[i]])
				signal(forwarded_signals[i], SIG_DFL);
		}
		signal(SIGCHLD, SIG_DFL);
		if (!opts.foreground)
			(void) setpgid(0, 0);
#if defined(__linux__) && defined(PR_SET_PDEATHSIG)
		/* if dlock-run dies, the lease is no longer renewed: stop too */
		(void) prctl(PR_SET_PDEATHSIG, opts.lost_signal, 0, 0, 0);
		if (getppid() != parent)
			_exit(128 + opts.lost_signal);
#endif
		BlockSignals(false, &old);
		execvp(opts.command[0], opts.command);
		fprintf(stderr, "%s: error: could not execute \"%s\": %s\n",
				progname, opts.command[0], strerror(errno));
		_exit(errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
	}
	(void) parent;

	/* both sides call setpgid, so that it is done before either goes on */
	if (!opts.foreground)
		(void) setpgid(pid, pid);
	child_pid = pid;
	child_running = true;
	supervising = true;
	BlockSignals(false, &old);
	Verbose("started the command (pid %d)", (int) pid);
}

/*
 * Supervise: keep the lease while the command (and whatever it left in its
 * process group) runs.
 */
static void
Supervise(void)
{
	double		kill_at = NO_DEADLINE;
	bool		killed = false;
	double		drain_since = NO_DEADLINE;
	bool		drain_signalled = false;

	for (;;)
	{
		double		now;
		double		wake = NO_DEADLINE;

		ReapChildren();
		if (!CommandAlive())
			break;
		now = Now();

		if (!child_running)
		{
			/*
			 * The command ended, but processes are left in its group.  Give
			 * them a moment (they may be dying of the same signal), then end
			 * them: they must not run on without the lease.
			 */
			if (drain_since < 0)
				drain_since = now;
			if (!drain_signalled && now >= drain_since + DRAIN_GRACE)
			{
				drain_signalled = true;
				Log("warning", "the command left processes running in its process group; "
					"sending them %s", SignalNameOf(opts.lost_signal));
				SignalCommand(opts.lost_signal);
				if (kill_at < 0 && kill_secs > 0)
					kill_at = now + kill_secs;
			}
		}

		CheckDeadline(&kill_at);
		if (kill_at >= 0 && !killed && now >= kill_at)
		{
			Log("warning", "the command is still running %g s after %s; sending SIGKILL",
				kill_secs, SignalNameOf(opts.lost_signal));
			SignalCommand(SIGKILL);
			killed = true;
		}
		if (lease.held && now >= lease.next_renew)
		{
			RenewOnce(&kill_at);
			continue;
		}

		if (lease.held)
			wake = Earliest(lease.next_renew, lease.deadline);
		if (kill_at >= 0 && !killed)
			wake = Earliest(wake, kill_at);
		if (!child_running || killed)
			wake = Earliest(wake, now + DRAIN_POLL);
		WaitEvent(-1, 0, wake);
	}
	supervising = false;
}

/*
 * Release: give the lease back, trying until deadline.  Returns false if the
 * server says the lease was no longer held.  If interruptible, a signal gives
 * up the attempt (the lease then expires on its own).
 */
static bool
Release(double deadline, bool interruptible)
{
	const char *params[2];
	PGresult   *res = NULL;
	char	   *errmsg = NULL;
	QueryOutcome outcome;
	double		retry = renew_secs < RETRY_DELAY_MAX ? renew_secs : RETRY_DELAY_MAX;

	params[0] = opts.name;
	params[1] = lease.token;

	for (;;)
	{
		outcome = QUERY_BROKEN;
		if (EnsureConnection(deadline, interruptible, &errmsg))
		{
			outcome = RunQuery(conn, sql_release, 2, params, deadline, interruptible,
							   &res, &errmsg);
			if (outcome == QUERY_OK)
			{
				bool		released = strcmp(PQgetvalue(res, 0, 0), "t") == 0;

				PQclear(res);
				if (released)
					Verbose("released the lease on \"%s\" (token %s)", opts.name, lease.token);
				return released;
			}
		}
		if (res)
			PQclear(res);
		res = NULL;
		if (outcome != QUERY_ERROR)
			DropConnection();
		if ((interruptible && interrupt_signal != 0) || Now() + retry >= deadline)
			break;
		free(errmsg);
		errmsg = NULL;
		WaitEvent(-1, 0, Now() + retry);
	}
	Log("warning", "could not release the lease on \"%s\" (token %s): %s; "
		"it expires on its own", opts.name, lease.token, errmsg ? errmsg : "interrupted");
	free(errmsg);
	return true;
}

/*
 * ConfirmLease: renew the lease before the command starts, when waiting for
 * it took longer than the renewal interval.  The local deadline counts from
 * the moment the acquire was sent, which after a long wait says little; a
 * renewal that succeeds proves the lease is held and sets a fresh deadline.
 * Exits if the lease cannot be confirmed.
 */
static void
ConfirmLease(void)
{
	const char *params[3];
	PGresult   *res;
	char	   *errmsg;
	double		sent;
	QueryOutcome outcome;

	params[0] = opts.name;
	params[1] = lease.token;
	params[2] = opts.ttl;
	sent = Now();
	outcome = RunQuery(conn, sql_renew, 3, params, sent + ttl_secs, true,
					   &res, &errmsg);
	if (outcome == QUERY_OK && strcmp(PQgetvalue(res, 0, 0), "t") == 0)
	{
		PQclear(res);
		lease.deadline = sent + ttl_secs;
		lease.next_renew = sent + renew_secs;
		if (interrupt_signal == 0)
			return;
	}
	else if (outcome == QUERY_OK)
	{
		Log("error", "lost the lease on \"%s\" (token %s) before the command started: "
			"the server says it is no longer held by this token", opts.name, lease.token);
		exit(opts.lost_exit_code);
	}
	if (interrupt_signal != 0)
	{
		(void) Release(Now() + CANCEL_WAIT, false);
		ExitInterrupted();
	}
	Log("error", "could not renew the lease on \"%s\" (token %s) before the command "
		"started: %s", opts.name, lease.token, errmsg);
	DropConnection();
	(void) Release(Now() + CANCEL_WAIT, false);
	exit(EXIT_UNAVAILABLE);
}

int
main(int argc, char **argv)
{
	char	   *errmsg;
	int			status;

	ParseOptions(argc, argv);
	SetUpSignals();

	conn = Connect(NO_DEADLINE, true, &errmsg);
	if (conn == NULL)
	{
		if (interrupt_signal != 0)
			ExitInterrupted();
		Log("error", "could not connect to the database: %s", errmsg);
		exit(EXIT_UNAVAILABLE);
	}
	BuildQueries();

	/* the durations, as the server reads them */
	ttl_secs = ReadDuration("--ttl", opts.ttl);
	wait_secs = ReadDuration("-w/--wait", opts.wait);
	kill_secs = ReadDuration("-k/--kill-after", opts.kill_after);
	if (ttl_secs <= 0)
		UsageError("invalid value \"%s\" for option --ttl: must be positive", opts.ttl);
	if (opts.renew_every == NULL)
		renew_secs = ttl_secs / 3;
	else
		renew_secs = ReadDuration("--renew-every", opts.renew_every);
	if (wait_secs < 0)
		UsageError("invalid value \"%s\" for option -w/--wait: must not be negative", opts.wait);
	if (kill_secs < 0)
		UsageError("invalid value \"%s\" for option -k/--kill-after: must not be negative",
				   opts.kill_after);
	if (opts.renew_every != NULL && (renew_secs <= 0 || renew_secs >= ttl_secs))
		UsageError("invalid value \"%s\" for option --renew-every: "
				   "must be positive and shorter than --ttl", opts.renew_every);

	Acquire();

	/* interrupted while the acquire was on its way: give the lease back */
	if (interrupt_signal != 0)
	{
		(void) Release(Now() + CANCEL_WAIT, false);
		ExitInterrupted();
	}

	/* a long wait may have used up part of the lease: renew it first */
	if (Now() >= lease.next_renew)
		ConfirmLease();

	StartCommand();
	if (child_pid <= 0)
	{
		(void) Release(lease.deadline, false);
		exit(EXIT_OSERR);
	}
	Supervise();

	status = WIFEXITED(child_status) ? WEXITSTATUS(child_status) :
		WIFSIGNALED(child_status) ? 128 + WTERMSIG(child_status) : 1;
	Verbose("the command exited with status %d", status);

	if (lease.lost)
	{
		Log("error", "the command ended with status %d after the lease on \"%s\" was lost",
			status, opts.name);
		exit(opts.lost_exit_code);
	}
	if (!Release(lease.deadline, true))
	{
		Log("error", "the lease on \"%s\" (token %s) was lost before the command ended "
			"(it expired or was released or taken over); the command ended with status %d",
			opts.name, lease.token, status);
		exit(opts.lost_exit_code);
	}
	DropConnection();
	return status;
}

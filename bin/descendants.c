/*-------------------------------------------------------------------------
 *
 * descendants.c
 *		every process the command started, found and signalled safely
 *
 * dlock-run is a child subreaper (PR_SET_CHILD_SUBREAPER), so whatever the
 * command starts stays its descendant: an orphan (a double fork, setsid,
 * a process in another process group such as coreutils timeout's child)
 * is reparented to dlock-run, not to init.  All of them are the command.
 *
 * They are found from /proc/PID/task/TID/children, starting at dlock-run's
 * own pid and then under each process found, over and over until a scan
 * finds no new process.  Each is signalled through a pidfd (pidfd_open),
 * opened once when the process is found and checked against its parent
 * (the parent in /proc/PID/stat must be the process it was found under,
 * still alive), so that a pid that was reused by an unrelated process is
 * never signalled.  A pidfd that polls readable is a process that has
 * exited (a zombie does no work); it is forgotten once it has been reaped.
 *
 * A descendant that runs as another user (a setuid program such as sudo or
 * su) cannot be signalled: pidfd_send_signal fails with EPERM.  It is
 * still found (pidfd_open works for any process we can see, and its parent
 * is checked in /proc/PID/stat), counted, named (with its user) and waited
 * for; the supervisor keeps the lease while it runs, and after a loss says
 * that it could not be stopped.
 *
 * Without pidfds (a kernel older than 5.3) the same is done with kill(),
 * which is safe for dlock-run's own children only.  When pidfd_open fails
 * for lack of file descriptors (EMFILE, ENFILE), the process is tracked by
 * its pid with kill(), never taken for gone; RaiseFdLimit raises the soft
 * RLIMIT_NOFILE to the hard limit at start so that this stays rare.  The
 * last FD_RESERVE descriptors are never used for pidfds (a process that
 * would get one is tracked by pid instead), so that reading /proc and the
 * connection always have descriptors left.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pwd.h>
#include <sys/resource.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#include "dlock-run.h"

typedef struct Descendant
{
	pid_t		pid;
	int			pidfd;			/* -1 if pidfds are not available */
	bool		by_pid;			/* no pidfd for lack of descriptors: use kill() */
	unsigned	round;			/* the last round that signalled it */
	char		comm[20];		/* its name when it was found */
} Descendant;

typedef enum AdoptResult
{
	GONE,
	ADOPTED,
	RESCAN
} AdoptResult;

static Descendant *procs = NULL;
static int	nprocs = 0;
static int	maxprocs = 0;
static unsigned round_no = 0;

/* whose descendants (0: this process's), and one process that is not one */
static pid_t root_pid = 0;
static pid_t except_pid = 0;

/* children dlock-run had before the command (ExcludeEarlierChildren) */
typedef struct EarlierChild
{
	pid_t		pid;
	unsigned long long start;	/* its start time */
} EarlierChild;
static EarlierChild earlier[64];
static size_t n_earlier = 0;

/* pidfds only below this descriptor number (RaiseFdLimit); -1: no limit */
#define FD_RESERVE	16
/* the reserve and a few pidfds: with fewer, RaiseFdLimit refuses to run */
#define FD_MINIMUM	(FD_RESERVE + 4)
static long pidfd_cap = -1;

/*
 * PidfdOpen, PidfdSignal: the system calls, or -1 with ENOSYS.
 */
static int
PidfdOpen(pid_t pid)
{
#if defined(__linux__) && defined(SYS_pidfd_open)
	return (int) syscall(SYS_pidfd_open, pid, 0);
#else
	(void) pid;
	errno = ENOSYS;
	return -1;
#endif
}

static int
PidfdSignal(int pidfd, int signo)
{
#if defined(__linux__) && defined(SYS_pidfd_send_signal)
	return (int) syscall(SYS_pidfd_send_signal, pidfd, signo, NULL, 0);
#else
	(void) pidfd;
	(void) signo;
	errno = ENOSYS;
	return -1;
#endif
}

/*
 * SendTo: signal one descendant; false if it no longer exists.
 */
static bool
SendTo(const Descendant *d, int signo)
{
	if (d->pidfd >= 0)
		return PidfdSignal(d->pidfd, signo) == 0;
	return kill(d->pid, signo) == 0;
}

/*
 * Exists: the descendant has not been reaped, whether or not dlock-run may
 * signal it (EPERM: it runs as another user).
 */
static bool
Exists(const Descendant *d)
{
	return SendTo(d, 0) || errno == EPERM;
}

/*
 * PidfdExists: the same for a bare pidfd.
 */
static bool
PidfdExists(int pidfd)
{
	return PidfdSignal(pidfd, 0) == 0 || errno == EPERM;
}

/*
 * Reachable: dlock-run may signal the descendant.
 */
static bool
Reachable(const Descendant *d)
{
	return SendTo(d, 0);
}

/*
 * RaiseFdLimit: the soft RLIMIT_NOFILE up to the hard limit, so that there
 * is a pidfd for every descendant.
 */
void
RaiseFdLimit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < rl.rlim_max)
	{
		struct rlimit raised = rl;

		raised.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
			rl = raised;
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t) 1 << 30)
		pidfd_cap = (long) rl.rlim_cur - FD_RESERVE;

	/*
	 * With fewer descriptors than the reserve and a few pidfds need, /proc
	 * could not be read while descendants are tracked (the reserve would be
	 * off), and a descendant that cannot be looked at must never be taken
	 * for gone.
	 */
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t) FD_MINIMUM)
	{
		Log("error", "too few file descriptors: dlock-run needs at least %d (ulimit -n is %ld)",
			FD_MINIMUM, (long) rl.rlim_cur);
		exit(EXIT_OSERR);
	}
}

/*
 * StartTimeOf: the start time of pid (/proc/PID/stat, field 22, in clock
 * ticks since boot); 0 if it cannot be read.  With the pid it names one
 * process: a pid reused later has a later start time.
 */
static unsigned long long
StartTimeOf(pid_t pid)
{
	char		path[64];
	char		buf[1024];
	char	   *close_paren;
	unsigned long long start = 0;
	ssize_t		n;
	int			fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	close_paren = strrchr(buf, ')');
	/* after the name: state (3), then fields 4 to 21, then starttime (22) */
	if (close_paren == NULL ||
		sscanf(close_paren + 1,
			   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			   &start) != 1)
		return 0;
	return start;
}

/*
 * ExcludeEarlierChildren: the children this process has before it starts
 * the command (an exec'd dlock-run inherits its predecessor's) are not the
 * command's.  Each is remembered by pid and start time, so that a pid one
 * of them leaves behind and a process of the command reuses still counts.
 */
void
ExcludeEarlierChildren(void)
{
	char		path[96];
	DIR		   *dir;
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%d/task", (int) getpid());
	dir = opendir(path);
	if (dir == NULL)
		return;
	while ((de = readdir(dir)) != NULL)
	{
		char		cpath[160];
		FILE	   *f;
		int			child;

		if (de->d_name[0] == '.')
			continue;
		snprintf(cpath, sizeof(cpath), "%s/%s/children", path, de->d_name);
		f = fopen(cpath, "re");
		if (f == NULL)
			continue;
		while (fscanf(f, "%d", &child) == 1 && n_earlier < lengthof(earlier))
		{
			earlier[n_earlier].pid = (pid_t) child;
			earlier[n_earlier].start = StartTimeOf((pid_t) child);
			if (earlier[n_earlier].start != 0)
				n_earlier++;
		}
		fclose(f);
	}
	closedir(dir);
}

/*
 * Earlier: is pid one of the children ExcludeEarlierChildren found, the
 * same process (its start time)?
 */
static bool
Earlier(pid_t pid)
{
	size_t		i;

	for (i = 0; i < n_earlier; i++)
	{
		if (earlier[i].pid == pid)
			return StartTimeOf(pid) == earlier[i].start;
	}
	return false;
}

/*
 * Running: the descendant has not exited (a zombie has).
 */
static bool
Running(const Descendant *d)
{
	struct pollfd pfd;

	if (d->pidfd < 0)
	{
		char		path[64];
		char		buf[512];
		char	   *p;
		ssize_t		n;
		int			fd;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int) d->pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return false;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		p = strrchr(buf, ')');
		return p != NULL && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	}
	pfd.fd = d->pidfd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	return poll(&pfd, 1, 0) == 0;
}

/*
 * ParentOf: the parent pid in /proc/PID/stat, and the name; -1 if gone.
 */
static pid_t
ParentOf(pid_t pid, char *comm, size_t commlen)
{
	char		path[64];
	char		buf[512];
	char	   *open_paren;
	char	   *close_paren;
	ssize_t		n;
	int			fd;
	int			ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (open_paren == NULL || close_paren == NULL || close_paren < open_paren ||
		sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
		return -1;
	snprintf(comm, commlen, "%.*s", (int) (close_paren - open_paren - 1), open_paren + 1);
	return (pid_t) ppid;
}

/*
 * Known: is pid in the table already?
 */
static bool
Known(pid_t pid)
{
	int			i;

	for (i = 0; i < nprocs; i++)
	{
		if (procs[i].pid == pid)
			return true;
	}
	return false;
}

/*
 * Adopt: pid was listed as a child of parent (parent_fd its pidfd, or -1
 * for dlock-run itself): open its pidfd and keep it if it checks out.
 * ADOPTED if it was added; RESCAN if it exists but has another parent now
 * (reparented to dlock-run while we looked: the next scan finds it there).
 */
static AdoptResult
Adopt(pid_t pid, pid_t parent, int parent_fd)
{
	Descendant d;
	pid_t		ppid;

	memset(&d, 0, sizeof(d));
	d.pid = pid;
	d.pidfd = PidfdOpen(pid);
	if (d.pidfd >= 0 && pidfd_cap >= 0 && d.pidfd >= pidfd_cap)
	{
		/* keep the last descriptors free for /proc and the connection */
		close(d.pidfd);
		d.pidfd = -1;
		d.by_pid = true;
	}
	else if (d.pidfd < 0 && (errno == EMFILE || errno == ENFILE))
		d.by_pid = true;		/* alive: track it by its pid */
	else if (d.pidfd < 0 && errno != ENOSYS)
		return GONE;
	ppid = ParentOf(pid, d.comm, sizeof(d.comm));
	if (ppid != parent ||
		(d.pidfd >= 0 && !PidfdExists(d.pidfd)) ||
		(parent_fd >= 0 && !PidfdExists(parent_fd)) ||
		(d.pidfd < 0 && !d.by_pid && parent != (root_pid > 0 ? root_pid : getpid())))
	{
		/* not (or no longer) that parent's child: a pid reused, or reparented */
		bool		moved = (d.pidfd >= 0 || d.by_pid) && ppid > 0 && Exists(&d);

		if (d.pidfd >= 0)
			close(d.pidfd);
		return moved ? RESCAN : GONE;
	}
	if (d.pidfd >= 0)
		(void) fcntl(d.pidfd, F_SETFD, FD_CLOEXEC);
	if (nprocs == maxprocs)
	{
		int			newmax = maxprocs > 0 ? maxprocs * 2 : 16;
		Descendant *p = realloc(procs, sizeof(Descendant) * newmax);

		if (p == NULL)
			Fatal("out of memory");
		procs = p;
		maxprocs = newmax;
	}
	procs[nprocs++] = d;
	return ADOPTED;
}

/*
 * ScanChildren: adopt every child of parent not in the table yet; the
 * number adopted (or found moving to another parent).
 */
static int
ScanChildren(pid_t parent, int parent_fd)
{
	char		path[96];
	DIR		   *dir;
	struct dirent *de;
	int			added = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int) parent);
	dir = opendir(path);
	if (dir == NULL)
		return 0;
	while ((de = readdir(dir)) != NULL)
	{
		char		cpath[160];
		char		buf[4096];
		FILE	   *f;
		int			child;

		if (de->d_name[0] == '.')
			continue;
		snprintf(cpath, sizeof(cpath), "%s/%s/children", path, de->d_name);
		f = fopen(cpath, "re");
		if (f == NULL)
			continue;
		setvbuf(f, buf, _IOFBF, sizeof(buf));
		while (fscanf(f, "%d", &child) == 1)
		{
			if ((pid_t) child == except_pid)
				continue;
			/* a child dlock-run had before the command is not the command's */
			if (parent == (root_pid > 0 ? root_pid : getpid()) && Earlier((pid_t) child))
				continue;
			if (!Known((pid_t) child) && Adopt((pid_t) child, parent, parent_fd) != GONE)
				added++;
		}
		fclose(f);
	}
	closedir(dir);
	return added;
}

/*
 * Forget: drop the descendants that have been reaped.
 */
static void
Forget(void)
{
	int			i;
	int			kept = 0;

	for (i = 0; i < nprocs; i++)
	{
		if (Exists(&procs[i]))
			procs[kept++] = procs[i];
		else if (procs[i].pidfd >= 0)
			close(procs[i].pidfd);
	}
	nprocs = kept;
}

/*
 * SetDescendantRoot: the descendants are root's, and except (dlock-run's
 * watchdog) is not one of them.  The watchdog scans from dlock-run's pid;
 * a process it finds there without a pidfd is a child of a stopped
 * dlock-run, whose pid cannot be reused while dlock-run has not reaped it.
 */
void
SetDescendantRoot(pid_t root, pid_t except)
{
	root_pid = root == getpid() ? 0 : root;
	except_pid = except;
}

/*
 * ScanDescendants: find every descendant of dlock-run, scanning again
 * until a scan finds no new process.
 */
void
ScanDescendants(void)
{
	int			added;

	Forget();
	do
	{
		int			i;

		added = ScanChildren(root_pid > 0 ? root_pid : getpid(), -1);
		for (i = 0; i < nprocs; i++)
		{
			if (Running(&procs[i]))
				added += ScanChildren(procs[i].pid, procs[i].pidfd);
		}
	} while (added > 0);
}

/*
 * SignalDescendants: send signo to every descendant that runs, scanning
 * again after each round until no new one turns up (with SIGSTOP or
 * SIGKILL nothing can start another process after that).  Returns how
 * many got it.
 */
int
SignalDescendants(int signo)
{
	int			sent = 0;
	bool		more;

	round_no++;
	do
	{
		int			i;

		more = false;
		ScanDescendants();
		for (i = 0; i < nprocs; i++)
		{
			if (procs[i].round == round_no || !Running(&procs[i]))
				continue;
			procs[i].round = round_no;
			if (SendTo(&procs[i], signo))
				sent++;
			more = true;
		}
	} while (more);
	return sent;
}

/*
 * CountDescendants: how many descendants run (zombies do not count).
 */
int
CountDescendants(void)
{
	int			i;
	int			n = 0;

	ScanDescendants();
	for (i = 0; i < nprocs; i++)
	{
		if (Running(&procs[i]))
			n++;
	}
	return n;
}

/*
 * CountUnreachable: how many running descendants dlock-run may not signal
 * (they run as another user); call after CountDescendants.
 */
int
CountUnreachable(void)
{
	int			i;
	int			n = 0;

	for (i = 0; i < nprocs; i++)
	{
		if (Running(&procs[i]) && !Reachable(&procs[i]))
			n++;
	}
	return n;
}

/*
 * UserOf: the name (or number) of the effective user of pid, from
 * /proc/PID/status; "?" if it cannot be read.
 */
static void
UserOf(pid_t pid, char *buf, size_t len)
{
	char		path[64];
	char		line[256];
	FILE	   *f;
	unsigned	ruid;
	unsigned	euid;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
	f = fopen(path, "re");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL)
	{
		if (sscanf(line, "Uid: %u %u", &ruid, &euid) == 2)
		{
			struct passwd *pw = getpwuid((uid_t) euid);

			if (pw != NULL)
				snprintf(buf, len, "%s", pw->pw_name);
			else
				snprintf(buf, len, "%u", euid);
			break;
		}
	}
	fclose(f);
}

/*
 * DescribeDescendants: "pid 123 (sleep), pid 124 (sh)" for those that run,
 * except the one with pid except (the command itself, or 0), cut to fit.
 * With only_unreachable, those that dlock-run may not signal, each with its
 * user: "pid 125 (sudo, user root)".
 */
void
DescribeDescendants(pid_t except, bool only_unreachable, char *buf, size_t len)
{
	size_t		used = 0;
	int			i;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (i = 0; i < nprocs && used + 1 < len; i++)
	{
		char		user[64] = "";
		bool		reachable;
		int			n;

		if (procs[i].pid == except || !Running(&procs[i]))
			continue;
		/* its name now: it may have exec'd since it was found */
		(void) ParentOf(procs[i].pid, procs[i].comm, sizeof(procs[i].comm));
		reachable = Reachable(&procs[i]);
		if (only_unreachable && reachable)
			continue;
		if (!reachable)
		{
			char		name[48];

			UserOf(procs[i].pid, name, sizeof(name));
			snprintf(user, sizeof(user), ", user %s", name);
		}
		n = snprintf(buf + used, len - used, "%spid %d (%s%s)", used > 0 ? ", " : "",
					 (int) procs[i].pid, procs[i].comm, user);
		if (n < 0 || (size_t) n >= len - used)
		{
			snprintf(buf + used, len - used, "%s", used + 5 < len ? ", ..." : "");
			break;
		}
		used += (size_t) n;
	}
}

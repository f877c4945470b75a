/*-------------------------------------------------------------------------
 *
 * output.c
 *		dlock-run's messages on stderr
 *
 * A message is formatted whole into a buffer and written with one write(2)
 * on file descriptor 2, never through stdio.  A write that fails (a closed
 * stderr, a pipe whose reader has gone: SIGPIPE is ignored) is dropped, and
 * so is a message that stderr cannot take within STDERR_WAIT (a pipe whose
 * reader has stalled): output never ends dlock-run, never holds it up and
 * never changes its exit status.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlock-run.h"

/* how long a message may wait for room in a pipe on stderr, in ms */
#define STDERR_WAIT_MS	100

const char *progname = "dlock-run";

/* -v: the messages of Verbose too */
bool		verbose = false;

/*
 * ProtectStandardFds: open /dev/null on any of file descriptors 0, 1 and 2
 * that is closed, so that no pipe, socket or file of dlock-run's own takes
 * their place (a message "to stderr" would then go into it).  They are
 * close-on-exec: the command gets them as closed as dlock-run got them.
 */
void
ProtectStandardFds(void)
{
	int			fd;

	for (fd = 0; fd <= 2; fd++)
	{
		int			nfd;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		nfd = open("/dev/null", (fd == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
		if (nfd < 0)
			exit(EXIT_OSERR);
		if (nfd != fd)
		{
			/* cannot happen: open() takes the lowest free descriptor */
			(void) dup3(nfd, fd, O_CLOEXEC);
			close(nfd);
		}
	}
}

/*
 * WriteStderr: write a whole message to stderr, or drop it.
 */
static void
WriteStderr(const char *buf, size_t len)
{
	struct pollfd pfd;

	pfd.fd = 2;
	pfd.events = POLLOUT;
	pfd.revents = 0;
	if (poll(&pfd, 1, STDERR_WAIT_MS) != 1 || (pfd.revents & POLLOUT) == 0)
		return;
	while (len > 0)
	{
		ssize_t		n = write(2, buf, len);

		/*
		 * EINTR: only the stop signals interrupt a write (the others restart
		 * it); a background job writing to its terminal gets SIGTTOU at each
		 * try, so the message is dropped rather than tried again.
		 */
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t) n;
	}
}

static void Emit(const char *level, const char *fmt, va_list ap)
			__attribute__((format(printf, 2, 0)));

/*
 * Emit: "dlock-run: LEVEL: text\n" (no LEVEL if NULL), built whole.
 */
static void
Emit(const char *level, const char *fmt, va_list ap)
{
	char		buf[2048];
	size_t		len;
	int			n;

	if (level != NULL)
		n = snprintf(buf, sizeof(buf), "%s: %s: ", progname, level);
	else
		n = snprintf(buf, sizeof(buf), "%s: ", progname);
	len = n > 0 ? (size_t) n : 0;
	n = vsnprintf(buf + len, sizeof(buf) - len - 1, fmt, ap);
	if (n > 0)
		len += (size_t) n;
	if (len > sizeof(buf) - 2)
		len = sizeof(buf) - 2;
	buf[len++] = '\n';
	WriteStderr(buf, len);
}

/*
 * Log: one message on stderr, "dlock-run: LEVEL: text".
 */
void
Log(const char *level, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	Emit(level, fmt, ap);
	va_end(ap);
}

/*
 * Verbose: a message for --verbose only.
 */
void
Verbose(const char *fmt,...)
{
	va_list		ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	Emit(NULL, fmt, ap);
	va_end(ap);
}

/*
 * Hint: "dlock-run: hint: text", a full sentence.
 */
void
Hint(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	Emit("hint", fmt, ap);
	va_end(ap);
}

/*
 * UsageError: complain about the command line and exit with EX_USAGE.
 */
void
UsageError(const char *fmt,...)
{
	va_list		ap;
	char		buf[256];
	int			n;

	va_start(ap, fmt);
	Emit("error", fmt, ap);
	va_end(ap);
	n = snprintf(buf, sizeof(buf), "Try \"%s --help\" for more information.\n", progname);
	if (n > 0 && (size_t) n < sizeof(buf))
		WriteStderr(buf, (size_t) n);
	exit(EXIT_USAGE);
}

/*
 * CopyMessage: a malloc'd copy of a libpq message without its trailing
 * newlines and spaces.
 */
char *
CopyMessage(const char *msg)
{
	char	   *copy;
	size_t		len;

	if (msg == NULL || *msg == '\0')
		msg = "(no message)";
	copy = strdup(msg);
	if (copy == NULL)
		Fatal("out of memory");
	len = strlen(copy);
	while (len > 0 && (copy[len - 1] == '\n' || copy[len - 1] == ' '))
		copy[--len] = '\0';
	return copy;
}

/*
 * server.c: a tiny TCP server for client.c to balance over, one behaviour per process.
 *
 *   server MODE [--delay-ms N] [--lifetime-s N]
 *
 * Listens on 127.0.0.1 on a port the system picks, prints "PORT <n>" on stdout, then serves every
 * connection on its own thread: it reads one request line and, by MODE,
 *   ok     replies "OK\n" at once;
 *   slow   replies "OK\n" after --delay-ms (default 50 ms);
 *   error  replies "ERR\n" (an error reply);
 *   reset  closes the connection at once with SO_LINGER 0, so the client sees a reset (RST).
 * The process exits by itself after --lifetime-s (default 120 s), so a server whose parent died does
 * not linger. C11 and POSIX only; it does not use weir.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum mode { MODE_OK, MODE_SLOW, MODE_ERROR, MODE_RESET };

static enum mode server_mode = MODE_OK;
static long delay_ms = 50;

static void usage(void) {
    fprintf(stderr, "usage: server ok|slow|error|reset [--delay-ms N] [--lifetime-s N]\n");
    exit(2);
}

static long parse_long(const char *text, long min, long max) {
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "server: not a number in [%ld, %ld]: %s\n", min, max, text);
        exit(2);
    }
    return v;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Reads until a newline, EOF, an error or a full buffer: the request itself does not matter. */
static void read_request(int fd) {
    char buf[128];
    size_t got = 0;
    while (got < sizeof buf) {
        ssize_t n = recv(fd, buf + got, sizeof buf - got, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        if (memchr(buf + got, '\n', (size_t)n) != NULL) {
            return;
        }
        got += (size_t)n;
    }
}

static void send_all(int fd, const char *text) {
    size_t len = strlen(text), sent = 0;
    while (sent < len) {
        ssize_t n = send(fd, text + sent, len - sent, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        sent += (size_t)n;
    }
}

static void *serve(void *arg) {
    int fd = (int)(intptr_t)arg;
    /* A client that never sends does not hold a thread for long. */
    struct timeval tv = {2, 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    read_request(fd);
    if (server_mode == MODE_SLOW) {
        sleep_ms(delay_ms);
    }
    send_all(fd, server_mode == MODE_ERROR ? "ERR\n" : "OK\n");
    close(fd);
    return NULL;
}

int main(int argc, char **argv) {
    long lifetime_s = 120;
    if (argc < 2) {
        usage();
    }
    if (strcmp(argv[1], "ok") == 0) {
        server_mode = MODE_OK;
    } else if (strcmp(argv[1], "slow") == 0) {
        server_mode = MODE_SLOW;
    } else if (strcmp(argv[1], "error") == 0) {
        server_mode = MODE_ERROR;
    } else if (strcmp(argv[1], "reset") == 0) {
        server_mode = MODE_RESET;
    } else {
        usage();
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--delay-ms") == 0 && i + 1 < argc) {
            delay_ms = parse_long(argv[++i], 0, 60000);
        } else if (strcmp(argv[i], "--lifetime-s") == 0 && i + 1 < argc) {
            lifetime_s = parse_long(argv[++i], 1, 86400);
        } else {
            usage();
        }
    }
    /* A client that resets while we reply must not kill the server. */
    signal(SIGPIPE, SIG_IGN);
    alarm((unsigned)lifetime_s);

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0) {
        perror("server: socket");
        return 1;
    }
    int one = 1;
    (void)setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listener, 512) != 0 ||
        getsockname(listener, (struct sockaddr *)&addr, &len) != 0) {
        perror("server: bind/listen");
        return 1;
    }
    printf("PORT %u\n", (unsigned)ntohs(addr.sin_port));
    fflush(stdout);

    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) {
                continue;
            }
            perror("server: accept");
            return 1;
        }
        if (server_mode == MODE_RESET) {
            /* Linger on, timeout 0: close() sends RST instead of FIN. */
            struct linger lg = {1, 0};
            (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            close(fd);
            continue;
        }
        pthread_t thread;
        if (pthread_create(&thread, NULL, serve, (void *)(intptr_t)fd) != 0) {
            serve((void *)(intptr_t)fd);
            continue;
        }
        pthread_detach(thread);
    }
}

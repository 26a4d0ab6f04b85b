/* The sandbox ("pause") image's program for the node conformance tier's stand-in images: it sleeps until
 * SIGINT or SIGTERM (then exits 0) and, as PID 1 of a pod sharing its process namespace, reaps the orphans
 * re-parented to it. Written for the tests. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig) {
        (void) sig;
        _exit(0);
}

static void on_child(int sig) {
        (void) sig;
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
}

int main(void) {
        struct sigaction term = { .sa_handler = on_term }, child = { .sa_handler = on_child, .sa_flags = SA_NOCLDSTOP };

        sigaction(SIGINT, &term, NULL);
        sigaction(SIGTERM, &term, NULL);
        sigaction(SIGCHLD, &child, NULL);
        for (;;)
                pause();
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manager owns the event loop and every event source (the
 * watcher, the HTTP server, the resync timer, signals, the target process's
 * pidfd) and the one Report the agent publishes. Every wake-up re-reads
 * both sides and recomputes: events are hints, state is the truth.
 */
#pragma once

#include "options.h"

typedef struct Manager Manager;

/* Builds the manager: opens the loop, binds the HTTP port, starts watching.
 * o is borrowed and must outlive the manager. Logs what failed and how to
 * fix it. Returns 0 with *ret new, or -errno. */
int manager_new(const Options *o, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Evaluates once, tells systemd READY=1, then runs the loop until SIGTERM or
 * SIGINT. Returns 0 on a clean stop, or -errno. */
int manager_run(Manager *m);

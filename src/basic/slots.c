/* SPDX-License-Identifier: Apache-2.0 */
/* A FIFO of slots on the loop (slots.h). Tickets move waiting → starting → running → idle; "starting" ones have had
 * their turn (or were withdrawn) and are told so by one deferred event, so that no start function ever runs inside
 * a call of this module and a caller may enqueue, release or withdraw from within its start function. A slot is
 * taken when a ticket leaves the queue for its turn and given back when it is released. */

#include "basic/slots.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "basic/list.h"
#include "basic/macro.h"

struct ticket_list {
        struct slot_ticket *head, *tail;
        unsigned n;
};

struct slots {
        unsigned limit;   /* 0: none */
        unsigned n_slots; /* tickets holding a slot: running, or starting with their turn */
        struct ticket_list waiting, starting;
        struct event *dispatch;
};

static void list_append(struct ticket_list *l, struct slot_ticket *t) {
        DLIST_APPEND_T(l->head, l->tail, t);
        l->n++;
}

static void list_remove(struct ticket_list *l, struct slot_ticket *t) {
        DLIST_REMOVE_T(l->head, l->tail, t);
        assert(l->n > 0);
        l->n--;
}

static bool slot_free(const struct slots *p) {
        return p->limit == 0 || p->n_slots < p->limit;
}

/* wake the dispatcher when a start is due or a waiting ticket can have its turn */
static void schedule(struct slots *p) {
        if (p->starting.n > 0 || (p->waiting.n > 0 && slot_free(p)))
                event_active(p->dispatch, EV_TIMEOUT, 0);
}

static void dispatch_cb(evutil_socket_t fd, short what, void *userdata) {
        struct slots *p = userdata;
        struct slot_ticket *t;

        /* the turns go in request order */
        while (p->waiting.head && slot_free(p)) {
                t = p->waiting.head;
                list_remove(&p->waiting, t);
                t->state = SLOT_STARTING;
                t->result = 0;
                p->n_slots++;
                list_append(&p->starting, t);
        }
        /* one start per ticket; a start may enqueue, withdraw or release anything, so the list is read afresh */
        while ((t = p->starting.head)) {
                list_remove(&p->starting, t);
                t->state = t->result == 0 ? SLOT_RUNNING : SLOT_IDLE;
                t->start(t->userdata, t->result);
        }
        schedule(p);
}

int slots_new(struct event_base *base, unsigned limit, struct slots **ret) {
        struct slots *p;

        assert(base);
        assert(ret);
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->limit = limit;
        p->dispatch = event_new(base, -1, 0, dispatch_cb, p);
        if (!p->dispatch) {
                free(p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

static void drop_all(struct ticket_list *l) {
        struct slot_ticket *t;

        while ((t = l->head)) {
                list_remove(l, t);
                t->state = SLOT_IDLE;
        }
}

struct slots *slots_free(struct slots *p) {
        if (!p)
                return NULL;
        drop_all(&p->waiting);
        drop_all(&p->starting);
        event_free(p->dispatch);
        free(p);
        return NULL;
}

void slots_enqueue(struct slots *p, struct slot_ticket *t, slot_start_fn start, void *userdata) {
        assert(p);
        assert(t);
        assert(start);
        assert(t->state == SLOT_IDLE);
        t->start = start;
        t->userdata = userdata;
        t->result = 0;
        t->state = SLOT_WAITING;
        list_append(&p->waiting, t);
        schedule(p);
}

bool slots_withdraw(struct slots *p, struct slot_ticket *t) {
        assert(p);
        assert(t);
        if (t->state != SLOT_WAITING)
                return false;
        list_remove(&p->waiting, t);
        t->state = SLOT_STARTING;
        t->result = -ECANCELED;
        list_append(&p->starting, t);
        schedule(p);
        return true;
}

void slots_release(struct slots *p, struct slot_ticket *t) {
        assert(t);
        switch (t->state) {
        case SLOT_IDLE:
                return;
        case SLOT_WAITING:
                assert(p);
                list_remove(&p->waiting, t);
                break;
        case SLOT_STARTING:
                assert(p);
                list_remove(&p->starting, t);
                if (t->result == 0) {
                        assert(p->n_slots > 0);
                        p->n_slots--;
                }
                break;
        case SLOT_RUNNING:
                assert(p);
                assert(p->n_slots > 0);
                p->n_slots--;
                break;
        }
        t->state = SLOT_IDLE;
        schedule(p);
}

unsigned slots_running(const struct slots *p) {
        return p ? p->n_slots : 0;
}

unsigned slots_waiting(const struct slots *p) {
        return p ? p->waiting.n : 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* An intrusive doubly linked list (systemd's list.h, libuv's queue): the items carry their own links, the list is
 * a pointer to its first item. By default the links are the members `prev` and `next`; an item that sits in two
 * lists names the second pair (`DLIST_PREPEND_F(by_node_prev, by_node_next, head, item)`). Linking and unlinking
 * are O(1) and allocate nothing; an unlinked item has both links NULL, so that unlinking twice is harmless and
 * DLIST_LINKED tells whether an item is in the list. (DLIST_, because <sys/queue.h>, which libevent's headers
 * include, owns the LIST_ names.)
 *
 *         struct conn { struct conn *prev, *next; ... };
 *         struct server { struct conn *conns; ... };
 *
 *         DLIST_PREPEND(s->conns, c);
 *         DLIST_FOREACH_SAFE(c, next, s->conns) if (idle(c)) { DLIST_REMOVE(s->conns, c); conn_free(c); }
 */

#include <assert.h>
#include <stddef.h>

#define DLIST_PREPEND_F(prev_, next_, head, item) \
        do {                                      \
                __typeof__(item) _li = (item);    \
                assert(_li);                      \
                _li->prev_ = NULL;                \
                _li->next_ = (head);              \
                if (_li->next_)                   \
                        _li->next_->prev_ = _li;  \
                (head) = _li;                     \
        } while (0)

/* Unlinks item if it is in the list headed by head; nothing otherwise. */
#define DLIST_REMOVE_F(prev_, next_, head, item)        \
        do {                                            \
                __typeof__(item) _li = (item);          \
                if (_li->prev_)                         \
                        _li->prev_->next_ = _li->next_; \
                else if ((head) == _li)                 \
                        (head) = _li->next_;            \
                else                                    \
                        break; /* not linked */         \
                if (_li->next_)                         \
                        _li->next_->prev_ = _li->prev_; \
                _li->prev_ = _li->next_ = NULL;         \
        } while (0)

#define DLIST_LINKED_F(prev_, next_, head, item) ((item)->prev_ || (head) == (item))

/* Iteration that allows the current item to be unlinked (and freed) in the body. */
#define DLIST_FOREACH_SAFE_F(next_, i, n, head) for ((i) = (head); (i) && ((n) = (i)->next_, 1); (i) = (n))

/* A list that also keeps its last item (a queue: append at the tail, take from the head). */
#define DLIST_APPEND_T(head, tail, item)       \
        do {                                   \
                __typeof__(item) _li = (item); \
                assert(_li);                   \
                _li->next = NULL;              \
                _li->prev = (tail);            \
                if (_li->prev)                 \
                        _li->prev->next = _li; \
                else                           \
                        (head) = _li;          \
                (tail) = _li;                  \
        } while (0)

#define DLIST_PREPEND_T(head, tail, item)      \
        do {                                   \
                __typeof__(item) _lt = (item); \
                DLIST_PREPEND(head, _lt);      \
                if (!(tail))                   \
                        (tail) = _lt;          \
        } while (0)

#define DLIST_REMOVE_T(head, tail, item)       \
        do {                                   \
                __typeof__(item) _lt = (item); \
                if ((tail) == _lt)             \
                        (tail) = _lt->prev;    \
                DLIST_REMOVE(head, _lt);       \
        } while (0)

#define DLIST_PREPEND(head, item) DLIST_PREPEND_F(prev, next, head, item)
#define DLIST_REMOVE(head, item) DLIST_REMOVE_F(prev, next, head, item)
#define DLIST_LINKED(head, item) DLIST_LINKED_F(prev, next, head, item)
#define DLIST_FOREACH(i, head) for ((i) = (head); (i); (i) = (i)->next)
#define DLIST_FOREACH_SAFE(i, n, head) DLIST_FOREACH_SAFE_F(next, i, n, head)

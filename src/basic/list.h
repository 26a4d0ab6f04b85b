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
 *
 * FLIST_ is the singly linked ("forward") kind, for items that carry only `next` (or a named link): a stack
 * (FLIST_PREPEND, FLIST_POP) or a FIFO queue that keeps its last item (FLIST_APPEND_T, FLIST_POP_T); unlinking from
 * the middle (FLIST_REMOVE) searches the list, O(n). Use it where items are few or leave from the head.
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

/* Links item at the end: O(n), a walk (keep a tail, DLIST_APPEND_T, where lists are long). */
#define DLIST_APPEND_F(prev_, next_, head, item)             \
        do {                                                 \
                __typeof__(item) _li = (item), _lt = (head); \
                assert(_li);                                 \
                _li->next_ = NULL;                           \
                while (_lt && _lt->next_)                    \
                        _lt = _lt->next_;                    \
                _li->prev_ = _lt;                            \
                if (_lt)                                     \
                        _lt->next_ = _li;                    \
                else                                         \
                        (head) = _li;                        \
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
#define DLIST_APPEND(head, item) DLIST_APPEND_F(prev, next, head, item)
#define DLIST_REMOVE(head, item) DLIST_REMOVE_F(prev, next, head, item)
#define DLIST_LINKED(head, item) DLIST_LINKED_F(prev, next, head, item)
#define DLIST_FOREACH(i, head) for ((i) = (head); (i); (i) = (i)->next)
#define DLIST_FOREACH_SAFE(i, n, head) DLIST_FOREACH_SAFE_F(next, i, n, head)

/* ---- singly linked lists */

#define FLIST_PREPEND_F(next_, head, item)     \
        do {                                   \
                __typeof__(item) _fi = (item); \
                assert(_fi);                   \
                _fi->next_ = (head);           \
                (head) = _fi;                  \
        } while (0)

/* Unlinks item if it is in the list (its link is then NULL); nothing otherwise. */
#define FLIST_REMOVE_F(next_, head, item)                                         \
        do {                                                                      \
                __typeof__(item) _fi = (item);                                    \
                for (__typeof__(item) *_fq = &(head); *_fq; _fq = &(*_fq)->next_) \
                        if (*_fq == _fi) {                                        \
                                *_fq = _fi->next_;                                \
                                _fi->next_ = NULL;                                \
                                break;                                            \
                        }                                                         \
        } while (0)

/* Links item at the end: O(n), a walk (a queue keeps its tail: FLIST_APPEND_T). */
#define FLIST_APPEND_F(next_, head, item)                      \
        do {                                                   \
                __typeof__(item) _fi = (item), *_fq = &(head); \
                assert(_fi);                                   \
                while (*_fq)                                   \
                        _fq = &(*_fq)->next_;                  \
                _fi->next_ = NULL;                             \
                *_fq = _fi;                                    \
        } while (0)

/* ret = the first item, unlinked (NULL when the list is empty). */
#define FLIST_POP_F(next_, head, ret)          \
        do {                                   \
                (ret) = (head);                \
                if (ret) {                     \
                        (head) = (ret)->next_; \
                        (ret)->next_ = NULL;   \
                }                              \
        } while (0)

/* A queue: append at the tail, take from the head (the tail follows). */
#define FLIST_APPEND_T_F(next_, head, tail, item) \
        do {                                      \
                __typeof__(item) _fi = (item);    \
                assert(_fi);                      \
                _fi->next_ = NULL;                \
                if (tail)                         \
                        (tail)->next_ = _fi;      \
                else                              \
                        (head) = _fi;             \
                (tail) = _fi;                     \
        } while (0)

#define FLIST_POP_T_F(next_, head, tail, ret)  \
        do {                                   \
                FLIST_POP_F(next_, head, ret); \
                if (!(head))                   \
                        (tail) = NULL;         \
        } while (0)

/* Unlinks item from a queue (O(n)); the tail follows. */
#define FLIST_REMOVE_T_F(next_, head, tail, item)                                     \
        do {                                                                          \
                __typeof__(item) _ft = (item), _fp = NULL;                            \
                for (__typeof__(item) _fc = (head); _fc; _fp = _fc, _fc = _fc->next_) \
                        if (_fc == _ft) {                                             \
                                if (_fp)                                              \
                                        _fp->next_ = _ft->next_;                      \
                                else                                                  \
                                        (head) = _ft->next_;                          \
                                if ((tail) == _ft)                                    \
                                        (tail) = _fp;                                 \
                                _ft->next_ = NULL;                                    \
                                break;                                                \
                        }                                                             \
        } while (0)

#define FLIST_PREPEND(head, item) FLIST_PREPEND_F(next, head, item)
#define FLIST_APPEND(head, item) FLIST_APPEND_F(next, head, item)
#define FLIST_REMOVE(head, item) FLIST_REMOVE_F(next, head, item)
#define FLIST_FOREACH_SAFE(i, n, head) DLIST_FOREACH_SAFE_F(next, i, n, head)
#define FLIST_POP(head, ret) FLIST_POP_F(next, head, ret)
#define FLIST_APPEND_T(head, tail, item) FLIST_APPEND_T_F(next, head, tail, item)
#define FLIST_POP_T(head, tail, ret) FLIST_POP_T_F(next, head, tail, ret)
#define FLIST_REMOVE_T(head, tail, item) FLIST_REMOVE_T_F(next, head, tail, item)

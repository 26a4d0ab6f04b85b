/* SPDX-License-Identifier: Apache-2.0 */
/* The intrusive list (src/basic/list.h): prepend, remove from the head, the middle and the tail, removing what is
 * not linked, iteration that frees as it goes, an item in two lists; the singly linked stack and queue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include "basic/list.h"

struct item {
        int v;
        struct item *prev, *next;
        struct item *odd_prev, *odd_next;
};

static void check(struct item *head, const int *want, size_t n) {
        struct item *i, *last = NULL;
        size_t k = 0;

        DLIST_FOREACH(i, head) {
                assert_true(k < n);
                assert_int_equal(i->v, want[k++]);
                assert_ptr_equal(i->prev, last);
                last = i;
        }
        assert_int_equal(k, n);
}

static void test_list(void **state) {
        struct item it[5] = {}, *head = NULL, *odd = NULL, *i, *n;

        for (int k = 0; k < 5; k++) {
                it[k].v = k;
                DLIST_PREPEND(head, &it[k]);
                if (k % 2)
                        DLIST_PREPEND_F(odd_prev, odd_next, odd, &it[k]);
        }
        check(head, (const int[]) { 4, 3, 2, 1, 0 }, 5);
        assert_true(DLIST_LINKED(head, &it[4]) && DLIST_LINKED(head, &it[0]));
        DLIST_REMOVE(head, &it[2]); /* the middle */
        DLIST_REMOVE(head, &it[4]); /* the head */
        DLIST_REMOVE(head, &it[0]); /* the tail */
        check(head, (const int[]) { 3, 1 }, 2);
        assert_false(DLIST_LINKED(head, &it[2]));
        assert_null(it[2].prev);
        assert_null(it[2].next);
        DLIST_REMOVE(head, &it[2]); /* not linked: nothing */
        check(head, (const int[]) { 3, 1 }, 2);
        /* the second list is its own */
        assert_ptr_equal(odd, &it[3]);
        assert_ptr_equal(odd->odd_next, &it[1]);
        DLIST_REMOVE_F(odd_prev, odd_next, odd, &it[3]);
        assert_ptr_equal(odd, &it[1]);
        check(head, (const int[]) { 3, 1 }, 2);
        /* unlink everything while iterating */
        DLIST_FOREACH_SAFE(i, n, head)
        DLIST_REMOVE(head, i);
        assert_null(head);
        DLIST_PREPEND(head, &it[2]);
        check(head, (const int[]) { 2 }, 1);
}

static void test_foreach_safe_frees(void **state) {
        struct item *head = NULL, *i, *n;
        int count = 0;

        for (int k = 0; k < 100; k++) {
                struct item *x = calloc(1, sizeof(*x));
                assert_non_null(x);
                x->v = k;
                DLIST_PREPEND(head, x);
        }
        DLIST_FOREACH_SAFE(i, n, head)
        if (i->v % 3 == 0) {
                DLIST_REMOVE(head, i);
                free(i);
        }
        DLIST_FOREACH(i, head) {
                assert_true(i->v % 3 != 0);
                count++;
        }
        assert_int_equal(count, 66);
        DLIST_FOREACH_SAFE(i, n, head) {
                DLIST_REMOVE(head, i);
                free(i);
        }
        assert_null(head);
}

static void test_queue_with_tail(void **state) {
        struct item it[4] = {}, *head = NULL, *tail = NULL;

        for (int k = 0; k < 3; k++) {
                it[k].v = k;
                DLIST_APPEND_T(head, tail, &it[k]);
        }
        check(head, (const int[]) { 0, 1, 2 }, 3);
        assert_ptr_equal(tail, &it[2]);
        DLIST_REMOVE_T(head, tail, &it[2]); /* the tail */
        assert_ptr_equal(tail, &it[1]);
        DLIST_REMOVE_T(head, tail, &it[0]); /* the head */
        assert_ptr_equal(head, &it[1]);
        assert_ptr_equal(tail, &it[1]);
        it[3].v = 3;
        DLIST_PREPEND_T(head, tail, &it[3]);
        check(head, (const int[]) { 3, 1 }, 2);
        assert_ptr_equal(tail, &it[1]);
        DLIST_REMOVE_T(head, tail, &it[1]);
        DLIST_REMOVE_T(head, tail, &it[3]);
        assert_null(head);
        assert_null(tail);
        DLIST_PREPEND_T(head, tail, &it[0]);
        assert_ptr_equal(head, &it[0]);
        assert_ptr_equal(tail, &it[0]);
}

struct fitem {
        int v;
        struct fitem *next;
};

static void fcheck(struct fitem *head, struct fitem *tail, const int *want, size_t n) {
        size_t k = 0;

        for (struct fitem *i = head; i; i = i->next) {
                assert_true(k < n);
                assert_int_equal(i->v, want[k++]);
                if (!i->next && tail)
                        assert_ptr_equal(i, tail);
        }
        assert_int_equal(k, n);
        if (n == 0 && tail)
                fail_msg("an empty queue with a tail");
}

static void test_forward_stack(void **state) {
        struct fitem it[4] = { { 0 }, { 1 }, { 2 }, { 3 } }, *head = NULL, *p;

        for (int k = 0; k < 4; k++)
                FLIST_PREPEND(head, &it[k]);
        fcheck(head, NULL, (const int[]) { 3, 2, 1, 0 }, 4);
        FLIST_REMOVE(head, &it[2]); /* the middle */
        assert_null(it[2].next);
        fcheck(head, NULL, (const int[]) { 3, 1, 0 }, 3);
        FLIST_REMOVE(head, &it[2]); /* not linked: nothing */
        FLIST_REMOVE(head, &it[3]); /* the head */
        FLIST_REMOVE(head, &it[0]); /* the last */
        fcheck(head, NULL, (const int[]) { 1 }, 1);
        FLIST_POP(head, p);
        assert_ptr_equal(p, &it[1]);
        assert_null(p->next);
        FLIST_POP(head, p);
        assert_null(p);
        assert_null(head);
        /* appended by a walk: in order */
        for (int k = 0; k < 3; k++)
                FLIST_APPEND(head, &it[k]);
        fcheck(head, NULL, (const int[]) { 0, 1, 2 }, 3);
}

static void test_append_walk(void **state) {
        struct item it[3] = {}, *head = NULL;

        for (int k = 0; k < 3; k++) {
                it[k].v = k;
                DLIST_APPEND(head, &it[k]);
        }
        check(head, (const int[]) { 0, 1, 2 }, 3);
        DLIST_REMOVE(head, &it[2]);
        DLIST_APPEND(head, &it[2]);
        check(head, (const int[]) { 0, 1, 2 }, 3);
}

static void test_forward_queue(void **state) {
        struct fitem it[4] = { { 0 }, { 1 }, { 2 }, { 3 } }, *head = NULL, *tail = NULL, *p;

        for (int k = 0; k < 4; k++)
                FLIST_APPEND_T(head, tail, &it[k]);
        fcheck(head, tail, (const int[]) { 0, 1, 2, 3 }, 4);
        FLIST_REMOVE_T(head, tail, &it[3]); /* the tail */
        assert_ptr_equal(tail, &it[2]);
        FLIST_REMOVE_T(head, tail, &it[1]); /* the middle */
        fcheck(head, tail, (const int[]) { 0, 2 }, 2);
        FLIST_POP_T(head, tail, p);
        assert_ptr_equal(p, &it[0]);
        FLIST_APPEND_T(head, tail, &it[3]);
        fcheck(head, tail, (const int[]) { 2, 3 }, 2);
        FLIST_POP_T(head, tail, p);
        FLIST_POP_T(head, tail, p);
        assert_ptr_equal(p, &it[3]);
        assert_null(head);
        assert_null(tail);
        FLIST_APPEND_T(head, tail, &it[1]); /* an emptied queue takes items again */
        fcheck(head, tail, (const int[]) { 1 }, 1);
        FLIST_REMOVE_T(head, tail, &it[1]);
        assert_null(head);
        assert_null(tail);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_queue_with_tail),    cmocka_unit_test(test_list),
                cmocka_unit_test(test_foreach_safe_frees), cmocka_unit_test(test_forward_stack),
                cmocka_unit_test(test_forward_queue),      cmocka_unit_test(test_append_walk),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

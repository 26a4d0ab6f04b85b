/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pod's own fields as the downward API reads them (upstream pkg/fieldpath): the one implementation behind
 * downwardAPI volume items and the environment's fieldRef. Pure. */

#include <stdbool.h>
#include <stddef.h>

#include "apis/pod.h"

struct ck_error;
#include "basic/strmap.h"

/* "metadata.labels['k']" → "metadata.labels" (allocated, NULL on OOM) and the subscript (pointer into fp,
 * length); false when fp has no subscript (SplitMaybeSubscriptedPath). */
bool fieldpath_split_subscript(const char *fp, char **ret_path, const char **ret_sub, size_t *ret_sub_len);

/* ExtractFieldPathAsString: metadata.name, metadata.namespace, metadata.uid, metadata.labels,
 * metadata.annotations and one label or annotation by subscript (a missing key is ""). -EINVAL for any other
 * path, with upstream's message in *ret_error ("unsupported fieldPath: x", `fieldPath "x" does not
 * support subscript`). Caller frees *ret. */
int fieldpath_extract(const struct pod *pod, const char *field_path, char **ret, struct ck_error **ret_error);

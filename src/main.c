/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/log.h"

int main(int argc, char **argv) {
        log_info("ckubelet skeleton");
        return 0;
}

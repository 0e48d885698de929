/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the enroot.conf model on arbitrary bytes (see model-target.h). */
#include "model-target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        return fuzz_document(DOC_CONF, data, size);
}

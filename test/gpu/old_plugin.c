/* A stand-in for a CUDA plugin of dcoll 1.11 or older: it exports the
 * versioned entry point those had (dcoll_cuda_plugin_v13), whose table
 * began with its ABI number. The loader must refuse it by name, never
 * read its table as its own. Never installed. */
#include <stdint.h>

static const struct {
    uint32_t abi;
    void *calls[64];
} table = {13, {0}};

__attribute__((visibility("default"))) const void *dcoll_cuda_plugin_v13(void);
const void *dcoll_cuda_plugin_v13(void)
{
    return &table;
}

/* error.c -- messages and names for the AL_E* codes. */
#include "error.h"

const char *
al_strerror(int err)
{
    switch (err) {
#define AL_ERR_MSG(name, val, msg)                                             \
    case AL_##name:                                                            \
        return msg;
        AL_ERRNO_MAP(AL_ERR_MSG)
#undef AL_ERR_MSG
    case 0:
        return "success";
    }
    return "unknown error";
}

const char *
al_err_name(int err)
{
    switch (err) {
#define AL_ERR_NAME(name, val, msg)                                            \
    case AL_##name:                                                            \
        return #name;
        AL_ERRNO_MAP(AL_ERR_NAME)
#undef AL_ERR_NAME
    case 0:
        return "OK";
    }
    return "EUNKNOWN";
}

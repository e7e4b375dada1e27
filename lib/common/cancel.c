/* The process-wide stop flag (cancel.h). */
#include "cancel.h"

volatile sig_atomic_t nopfs_stop_signal;

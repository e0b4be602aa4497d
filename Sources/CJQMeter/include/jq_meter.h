// What one jq program's run may still allocate: jq's own calls to malloc, counted on the
// thread that runs it, and a run halted at the allocation that passes its limit.
#ifndef REPLAY_JQ_METER_H
#define REPLAY_JQ_METER_H

#include <stdatomic.h>
#include <stdint.h>

/// Why a run was halted (`replay_jq_meter.breach`).
enum {
    REPLAY_JQ_RUNNING = 0,
    REPLAY_JQ_PAST_TIME = 1,
    REPLAY_JQ_PAST_MEMORY = 2,
};

/// One program's run, from `replay_jq_meter_begin` to `replay_jq_meter_end` on the thread
/// that runs it. Lives as long as its program (its address is the run's identity).
typedef struct replay_jq_meter {
    /// The interpreter to halt (`jq_state *`).
    void *state;
    /// Bytes jq may allocate on top of what it held on this thread when the run began.
    int64_t limit;
    /// What jq held on this thread when the run began.
    int64_t baseline;
    /// The most jq held above the baseline during the run.
    int64_t peak;
    /// `REPLAY_JQ_RUNNING` until something halts the run; the first to set it halts.
    _Atomic int breach;
} replay_jq_meter;

/// Points libjq's (and libonig's) calls to malloc, calloc, realloc, strdup and free at
/// counting wrappers; once per process, before the first program. False where the
/// libraries' relocations could not be found or changed: runs are then not metered.
_Bool replay_jq_meter_install(void);

/// The run starts on this thread: allocations are charged to `meter` until `end`.
void replay_jq_meter_begin(replay_jq_meter *meter, void *state, int64_t limit);

/// The run is over on this thread; what halted it, if anything (`REPLAY_JQ_…`).
int replay_jq_meter_end(replay_jq_meter *meter);

/// Halts the run for `reason` unless something already did; whether this call did. Safe
/// from another thread while the run is under way (the watchdog's time limit).
_Bool replay_jq_meter_halt(replay_jq_meter *meter, int reason);

#endif

/* The one clock: monotonic time for every measurement and deadline in
 * korch, and wall time for timestamps. (The exported model's runtime,
 * export/support/model_run.inc, keeps its own: it is standalone C.) */
#ifndef KORCH_CORE_CLOCK_H
#define KORCH_CORE_CLOCK_H

double korch_now_s(void);  /* monotonic seconds */
double korch_now_ms(void); /* monotonic milliseconds */
double korch_wall_s(void); /* unix time in seconds (when a profile was taken) */

#endif

/* The scheduler's state of one runtime. */
#include "sched.h"

#include "calibrate.h"
#include "cost.h"
#include "engine.h"
#include "hostwork.h"

int weft__sched_create(weft_runtime *rt, int policy, int scope,
                       unsigned host_workers)
{
    weft__sched *s = weft__calloc(1, sizeof *s);

    if (!s)
        return weft__error(WEFT_ENOMEM, "weft_runtime_create: out of memory");
    s->place_policy = policy;
    s->place_scope = scope;
    s->host_workers = host_workers;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->mem_lock, NULL);
    pthread_cond_init(&s->mem_cond, NULL);
    rt->sched = s;
    return 0;
}

void weft__sched_destroy(weft_runtime *rt)
{
    weft__sched *s = rt->sched;

    if (!s)
        return;
    /* No graph is left, so no launch and no host node is queued or
     * running. */
    weft__engine_destroy(rt);
    weft__hostwork_destroy(rt);
    weft__cal_free_held(rt);
    if (s->links) {
        weft__links_free(s->links);
        weft__free(s->links);
    }
    weft__ktime_destroy(s->ktime);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->mem_lock);
    pthread_cond_destroy(&s->mem_cond);
    weft__free(s);
    rt->sched = NULL;
}

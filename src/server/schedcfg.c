/*
 * schedcfg.c -- the core's configuration as the controller runs it: the
 * one place that turns `allot server`'s options (and the pools' settings)
 * into the al_config_t every cycle passes to the core, and GET /v1/config,
 * which shows that same al_config_t, so that what an operator reads is
 * what the core gets.
 *
 * May call: pools.c (al__pools_snap_config), fairshare.c (the half-life),
 * the core's defaults (al_config_default), req.c (replies).  Called by
 * cycle.c and route.c.
 */
#include <jansson.h>

#include "api_int.h"

void
al__sched_config(const al_ctl_t *ctl, al_config_t *cfg)
{
    al_config_default(cfg);
    al__pools_snap_config(&ctl->pools, cfg);
    cfg->usage_half_life = al__fairshare_half_life(ctl);
    cfg->lookahead_depth = (int)ctl->opts.lookahead_depth;
    cfg->lookahead_horizon = ctl->opts.lookahead_horizon_s;
    cfg->lookahead_hold = ctl->opts.lookahead_hold;
}

void
al__api_config(al_ctl_t *ctl, al__req_t *req)
{
    al_config_t cfg;
    al__sched_config(ctl, &cfg);
    json_t *s = json_pack(
        "{s:s, s:f, s:I, s:i, s:I, s:b, s:b, s:b, s:b, s:I, s:b, s:i, s:I, "
        "s:b, s:b}",
        "pack", al__pack_name(cfg.pack), "usage_weight", cfg.usage_weight,
        "usage_half_life", (json_int_t)cfg.usage_half_life, "reserve_depth",
        cfg.reserve_depth, "default_runtime", (json_int_t)cfg.default_runtime,
        "lend_reserved", cfg.lend_reserved, "reclaim", cfg.reclaim, "preempt",
        cfg.preempt, "borrow", cfg.borrow, "starve_after",
        (json_int_t)cfg.starve_after, "short_first", cfg.short_first,
        "lookahead_depth", cfg.lookahead_depth, "lookahead_horizon",
        (json_int_t)cfg.lookahead_horizon, "lookahead_hold", cfg.lookahead_hold,
        "ignore_deps", cfg.ignore_deps);
    al__reply(req, 200, json_pack("{s:o}", "scheduler", s));
}

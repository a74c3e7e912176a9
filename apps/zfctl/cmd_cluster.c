/* zfctl's views of a cluster (zfd --domain): the workers table, and the
 * per-worker part of a cluster-wide destroy's report. */
#include "zfctl.h"

#include <stdio.h>
#include <string.h>

void print_cluster_workers_header(void)
{
    printf("%-16s %-20s %-6s %10s %5s %9s %8s\n", "NAME", "HOST", "STATUS", "INSTANCES", "CPUS",
           "MEMORY", "PID");
}

void print_cluster_worker(const zf_config *w)
{
    printf("%-16s %-20s %-6s %10lld %5lld %8.1fG %8lld\n", cfg_str(w, "name"), cfg_str(w, "host"),
           cfg_str(w, "status"), cfg_num(w, "instances"), cfg_num(w, "cpus"),
           (double)cfg_num(w, "memory") / (1024.0 * 1024 * 1024), cfg_num(w, "pid"));
}

void print_cluster_destroy(const zf_config *r)
{
    const zf_config *pw = zf_config_get(r, "per_worker");
    for (size_t i = 0; i < zf_config_len(pw); i++) {
        const zf_config *w = zf_config_at(pw, i);
        printf("  worker %-16s bytes leaked %lld, remote links closed %lld, DDS entities left "
               "%lld\n",
               cfg_str(w, "worker"), cfg_num(w, "bytes_leaked"), cfg_num(w, "remote_links_closed"),
               cfg_num(w, "dds_entities_left"));
    }
    const zf_config *un = zf_config_get(r, "unreachable");
    for (size_t i = 0; i < zf_config_len(un); i++)
        printf("  worker %-16s unreachable: its part could not be destroyed from here\n",
               zf_config_text(zf_config_at(un, i)));
    const char *why = cfg_str(r, "errors");
    if (zf_config_len(un) && why && *why)
        printf("  why: %s\n", why);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Suite "stop": a slow peer is not a dead one. Two ranks under
 * `rcx-run --ft`, with the heartbeat on; rank 0 stops rank 1 (SIGSTOP)
 * while both are in the middle of an exchange, and a helper process
 * continues it (SIGCONT) after STOP_S seconds. Each scenario is one kind of
 * exchange: a fence epoch, a lock/unlock epoch, a lock_all epoch with
 * flushes, point-to-point messages (eager and rendezvous) and a bound
 * channel's stream. Every operation must complete with the right data,
 * and neither rank may be declared failed.
 *
 * On verbs (rxe) the stopped rank's kernel still answers the transport
 * (ACKs, RDMA READ responses), so the stop tests the layers above it:
 * the heartbeat, rendezvous, window protocols, the launcher's failure
 * notices. On shm a stopped rank moves nothing at all until it runs
 * again. That a real death is still found is the ft suite's business.
 *
 * The transport giving up on a live rank (what delayed ACKs do to a
 * queue pair) is made to happen by the fault provider on every provider:
 * the connection is remade and a stream across the break arrives whole,
 * in order, each message once; a window epoch after it works; puts and
 * gets in flight at the break, or issued while the connection is remade,
 * complete normally with every byte right; an atomic in flight at the
 * break reports RCX_ERR_TRANSPORT and runs once; a peer that does not
 * take part in the reconnection is failed only after RCX_FT_TIMEOUT_MS.
 */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "providers/fault/fault.h"
#include "lib/core/core.h"
#include "lib/chan/chan_int.h"
#include "tu.h"
#include "tu_mp.h"
#include "test_stop.h"

#define STOP_S	  3
#define NWORD	  TS_NWORD
#define PID_TAG	  91
#define DATA_TAG  92
#define CHAN_TAG  93
#define EAGER_LEN 512
#define RNDV_LEN  (1 << 20)
#define NMSG	  200 /* channel stream */

extern char **environ;

uint64_t ts_word(int from, int round, size_t i)
{
	return ((uint64_t)(from + 1) << 56) ^ ((uint64_t)round << 40) ^
	       (i * 0x9e3779b97f4a7c15ull);
}

/* Rank 1 tells rank 0 its pid; rank 0 gets it (0 on rank 1). */
static pid_t peer_pid(struct tp_job *j)
{
	int32_t pid = (int32_t)getpid();

	if (j->rank == 1) {
		TP_CHECK_OK(rcx_send(j->g, &pid, sizeof(pid), 0, PID_TAG));
		return 0;
	}
	pid = 0;
	TP_CHECK_OK(rcx_recv(j->g, &pid, sizeof(pid), 1, PID_TAG, NULL));
	return pid;
}

/*
 * Stop pid now; a shell continues it after STOP_S (not a thread of
 * ours, which could not run while a wait of ours holds the lock, nor a
 * bare fork of a process with verbs resources). Returns the helper.
 */
static pid_t stop(pid_t pid)
{
	char cmd[96];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	pid_t helper = -1;
	int ret;

	snprintf(cmd, sizeof(cmd), "sleep %d; kill -CONT %d", STOP_S, (int)pid);
	if (!TP_CHECK(pid > 0) || !TP_CHECK_EQ(kill(pid, SIGSTOP), 0))
		return -1;
	ret = posix_spawn(&helper, argv[0], NULL, NULL, argv, environ);
	if (!TP_CHECK_EQ(ret, 0)) {
		kill(pid, SIGCONT);
		return -1;
	}
	printf("rank 0: rank 1 (pid %d) stopped for %d s\n", (int)pid, STOP_S);
	fflush(stdout);
	return helper;
}

/* The helper has continued the peer (always, so the job can end). */
static void resumed(pid_t pid, pid_t helper)
{
	int st = 0;

	if (helper > 0 && TP_CHECK_EQ(waitpid(helper, &st, 0), helper))
		TP_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (pid > 0)
		kill(pid, SIGCONT);
}

/* Nobody was declared failed, here or (the job's end) anywhere. */
void ts_none_failed(struct tp_job *j)
{
	int n = -1;

	TP_CHECK_OK(rcx_group_get_failed(j->g, NULL, 0, &n));
	TP_CHECK_EQ(n, 0);
}

void ts_fill(uint64_t *buf, int from, int round, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = ts_word(from, round, i);
}

/* Words of buf that are not what from wrote in round. */
size_t ts_wrong(const uint64_t *buf, int from, int round, size_t n)
{
	size_t i, bad = 0;

	for (i = 0; i < n; i++)
		bad += buf[i] != ts_word(from, round, i);
	return bad;
}

struct rcx_win *ts_make(struct tp_job *j, uint64_t **base)
{
	struct rcx_win *w = NULL;

	if (!TP_CHECK_OK(rcx_win_allocate(j->g, NWORD * 8, 8, NULL,
					  (void **)base, &w)))
		return NULL;
	memset(*base, 0, NWORD * 8);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	return w;
}

/* Fence epoch: both put a block to the other; rank 1 is stopped in it. */
static void sc_fence(struct tp_job *j)
{
	uint64_t *base, src[NWORD / 2];
	int peer = 1 - j->rank;
	pid_t pid, helper = -1;
	struct rcx_win *w;

	if (!(w = ts_make(j, &base)))
		return;
	ts_fill(src, j->rank, 1, NWORD / 2);
	TP_CHECK_OK(rcx_win_fence(w, 0));
	pid = peer_pid(j);
	if (j->rank == 0)
		helper = stop(pid);
	TP_CHECK_OK(rcx_put(w, src, sizeof(src), peer, 0));
	TP_CHECK_OK(rcx_win_fence(w, 0));
	TP_CHECK_EQ(ts_wrong(base, peer, 1, NWORD / 2), 0);
	/* a second epoch after the stop, gets this time */
	TP_CHECK_OK(rcx_get(w, src, sizeof(src), peer, 0));
	TP_CHECK_OK(rcx_win_fence(w, 0));
	TP_CHECK_EQ(ts_wrong(src, j->rank, 1, NWORD / 2), 0);
	if (j->rank == 0)
		resumed(pid, helper);
	ts_none_failed(j);
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * Lock/unlock: rank 0 locks the stopped rank 1 exclusively, puts, unlocks,
 * reads back under a shared lock; rank 1, when it runs again, does the
 * same to rank 0.
 */
static void lock_put_get(struct tp_job *j, struct rcx_win *w, int target)
{
	uint64_t src[NWORD / 2], back[NWORD / 2];

	ts_fill(src, j->rank, 2, NWORD / 2);
	memset(back, 0, sizeof(back));
	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, target));
	TP_CHECK_OK(rcx_put(w, src, sizeof(src), target, NWORD / 2));
	TP_CHECK_OK(rcx_win_unlock(w, target));
	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, target));
	TP_CHECK_OK(rcx_get(w, back, sizeof(back), target, NWORD / 2));
	TP_CHECK_OK(rcx_win_unlock(w, target));
	TP_CHECK_EQ(ts_wrong(back, j->rank, 2, NWORD / 2), 0);
}

static void sc_lock(struct tp_job *j)
{
	uint64_t *base;
	pid_t pid, helper = -1;
	struct rcx_win *w;

	if (!(w = ts_make(j, &base)))
		return;
	pid = peer_pid(j);
	if (j->rank == 0) {
		helper = stop(pid);
		lock_put_get(j, w, 1);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1)
		lock_put_get(j, w, 0);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_EQ(ts_wrong(base + NWORD / 2, 1 - j->rank, 2, NWORD / 2), 0);
	if (j->rank == 0)
		resumed(pid, helper);
	ts_none_failed(j);
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * In a lock_all epoch: a block put to the peer at this rank's quarter,
 * flushed, read back and checked (round: what the words say).
 */
void ts_put_get_back(struct tp_job *j, struct rcx_win *w, int round)
{
	uint64_t src[NWORD / 4], back[NWORD / 4];
	size_t off = (size_t)j->rank * NWORD / 4;
	int peer = 1 - j->rank;

	ts_fill(src, j->rank, round, NWORD / 4);
	TP_CHECK_OK(rcx_put(w, src, sizeof(src), peer, off));
	TP_CHECK_OK(rcx_win_flush(w, peer));
	memset(back, 0, sizeof(back));
	TP_CHECK_OK(rcx_get(w, back, sizeof(back), peer, off));
	TP_CHECK_OK(rcx_win_flush_all(w));
	TP_CHECK_EQ(ts_wrong(back, j->rank, round, NWORD / 4), 0);
}

/* lock_all epoch: puts and gets with flushes to the stopped rank. */
static void sc_lockall(struct tp_job *j)
{
	uint64_t *base;
	int peer = 1 - j->rank, k;
	pid_t pid, helper = -1;
	struct rcx_win *w;

	if (!(w = ts_make(j, &base)))
		return;
	TP_CHECK_OK(rcx_win_lock_all(w));
	pid = peer_pid(j);
	if (j->rank == 0)
		helper = stop(pid);
	for (k = 0; k < 8; k++)
		ts_put_get_back(j, w, 10 + k);
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_EQ(
		ts_wrong(base + (size_t)peer * NWORD / 4, peer, 17, NWORD / 4),
		0);
	if (j->rank == 0)
		resumed(pid, helper);
	ts_none_failed(j);
	TP_CHECK_OK(rcx_win_free(&w));
}

/* Point-to-point both ways, eager and rendezvous, across the stop. */
static void sc_p2p(struct tp_job *j)
{
	size_t ne = EAGER_LEN / 8, nr = RNDV_LEN / 8;
	uint64_t *se = malloc(EAGER_LEN), *re = calloc(1, EAGER_LEN);
	uint64_t *sr = malloc(RNDV_LEN), *rr = calloc(1, RNDV_LEN);
	struct rcx_req *r[4] = { NULL };
	int peer = 1 - j->rank, k;
	pid_t pid, helper = -1;

	if (!TP_CHECK(se && re && sr && rr))
		goto out;
	pid = peer_pid(j);
	if (j->rank == 0)
		helper = stop(pid);
	for (k = 0; k < 4; k++) {
		ts_fill(se, j->rank, 20 + k, ne);
		ts_fill(sr, j->rank, 30 + k, nr);
		TP_CHECK_OK(
			rcx_irecv(j->g, re, EAGER_LEN, peer, DATA_TAG, &r[0]));
		TP_CHECK_OK(rcx_irecv(j->g, rr, RNDV_LEN, peer, DATA_TAG + 1,
				      &r[1]));
		TP_CHECK_OK(
			rcx_isend(j->g, se, EAGER_LEN, peer, DATA_TAG, &r[2]));
		TP_CHECK_OK(rcx_isend(j->g, sr, RNDV_LEN, peer, DATA_TAG + 1,
				      &r[3]));
		TP_CHECK_OK(rcx_waitall(4, r, RCX_STATUS_IGNORE));
		TP_CHECK_EQ(ts_wrong(re, peer, 20 + k, ne), 0);
		TP_CHECK_EQ(ts_wrong(rr, peer, 30 + k, nr), 0);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0)
		resumed(pid, helper);
	ts_none_failed(j);
out:
	free(se);
	free(re);
	free(sr);
	free(rr);
}

/*
 * A bound channel's stream 0 -> 1 (write_imm, four slots): rank 1 is
 * stopped after the first messages; every message arrives, in its slot.
 */
/*
 * Rank 0 sends 8 bytes of buf to rank 1 on a bound channel (protocol,
 * slots): *info and *init for the caller to free, whether or not the
 * bind (*ch) worked.
 */
bool ts_chan_open(struct rcx_group *g, const char *proto, const char *slots,
		  uint64_t *buf, struct rcx_info **info, struct rcx_req **init,
		  struct rcx_req **ch)
{
	TP_CHECK_OK(rcx_info_create(info));
	TP_CHECK_OK(rcx_info_set(*info, RCX_CHAN_PROTOCOL, proto));
	TP_CHECK_OK(rcx_info_set(*info, RCX_CHAN_SLOTS, slots));
	if (rcx_group_rank(g) == 0)
		TP_CHECK_OK(rcx_send_init(g, buf, 8, 1, CHAN_TAG, init));
	else
		TP_CHECK_OK(rcx_recv_init(g, buf, 8, 0, CHAN_TAG, init));
	return TP_CHECK_OK(rcx_bind(*init, *info, ch));
}

static void sc_chan(struct tp_job *j)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[4] = { 0 };
	struct rcx_status st;
	pid_t pid, helper = -1;
	int k, bad = 0;

	if (!ts_chan_open(j->g, "write_imm", "4", buf, &info, &init, &ch))
		goto out;
	pid = peer_pid(j);
	for (k = 0; k < NMSG; k++) {
		if (j->rank == 0) {
			if (k == 10)
				helper = stop(pid);
			buf[k % 4] = 1000 + (uint64_t)k;
			TP_CHECK_OK(rcx_start(ch));
			TP_CHECK_OK(rcx_wait(&ch, &st));
		} else {
			TP_CHECK_OK(rcx_start(ch));
			TP_CHECK_OK(rcx_wait(&ch, &st));
			bad += st.slot != k % 4 || st.count != 8 ||
			       buf[k % 4] != 1000 + (uint64_t)k;
		}
	}
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0)
		resumed(pid, helper);
	ts_none_failed(j);
	TP_CHECK_OK(rcx_bind_free(&ch, 1));
out:
	rcx_req_free(&init);
	rcx_info_free(&info);
}

/*
 * The transport gives up on a live peer that does not take part in a
 * reconnection (it computes): rank 0's connection to rank 1 reports a
 * send as failed (the fault provider, as when the QP's retries run out
 * under delayed ACKs). Rank 1 is not failed at once, only once
 * RCX_FT_TIMEOUT_MS has passed without the connection remade; from then
 * on it is, as a dead rank is. Rank 1 lives until rank 0 is gone.
 */
#define FT_TIMEOUT "3000"

static void ft_timeout_env(void)
{
	setenv("RCX_FT_TIMEOUT_MS", FT_TIMEOUT, 1);
}

/* Progress until rank of g is failed here; its number of failed. */
static int wait_failed(struct tp_job *j)
{
	long long end = tu_now_ms() + 60000;
	int n = 0;

	while (!n && tu_now_ms() < end)
		TP_CHECK_OK(rcx_group_get_failed(j->g, NULL, 0, &n));
	return n;
}

static void sc_transport(struct tp_job *j)
{
	int32_t pid = (int32_t)getpid(), pids[2] = { 0, 0 };
	uint64_t v = 7, in = 0;
	long long end;
	int n = -1;

	TP_CHECK_OK(rcx_group_allgather(j->g, &pid, sizeof(pid), pids));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0) {
		rcx__fault_fail_next(j->g->conns[1], RCX_ERR_TRANSPORT);
		TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), 1, DATA_TAG));
		TP_CHECK_OK(rcx_group_get_failed(j->g, NULL, 0, &n));
		TP_CHECK_EQ(n, 0);
		/* no reconnection comes: failed after the time-out */
		TP_CHECK_EQ(
			rcx_recv(j->g, &in, sizeof(in), 1, DATA_TAG + 1, NULL),
			RCX_ERR_PROC_FAILED);
		TP_CHECK_EQ(wait_failed(j), 1);
		TP_CHECK_EQ(rcx_send(j->g, &v, sizeof(v), 1, DATA_TAG),
			    RCX_ERR_PROC_FAILED);
	} else {
		TP_CHECK_OK(rcx_recv(j->g, &in, sizeof(in), 0, DATA_TAG, NULL));
		TP_CHECK_EQ(in, v);
		end = tu_now_ms() + 60000;
		while (kill(pids[0], 0) == 0 && tu_now_ms() < end)
			usleep(10000);
		TP_CHECK(tu_now_ms() < end);
	}
	/* no final barrier: the pair is broken */
	TP_CHECK_OK(rcx_group_free(&j->g));
}

/*
 * A bound channel's own queue pair gives up on a live peer (the fault
 * provider fails the completion of a send of rank 0, the sender, as when
 * its retries run out; the WR did its work): the sender's start reports
 * RCX_ERR_TRANSPORT, and so must the receiver's next receive, though its
 * own queue pair sees nothing (it only receives). It used to wait
 * forever. The message that broke may arrive first, or the news may
 * overtake it (another path). Neither rank is failed and the group works
 * on. Both protocols, with a watchdog: a receive that never ends fails.
 *
 * With RCX_FT_TIMEOUT_MS=0, which makes no remake (chan_remake.c; the
 * remake is the next case).
 *
 * The same once the group bound on was freed at both ends before the
 * break (channels may outlive their group): the notice must still reach
 * the peer. It used to be lost (the group's connection went with the
 * group), and the receiver waited. A sub-group for the send protocol, the
 * world itself for write_imm (then nothing else holds its connections).
 */
#define CHAN_BREAK 5 /* messages before the break */

/* Test *ch until done or 30 s: its outcome, -ETIMEDOUT for a hang. */
int ts_chan_outcome(struct rcx_req **ch, struct rcx_status *st)
{
	long long end = tu_now_ms() + 30000;
	int flag = 0, ret = 0;

	while (!flag && !ret && tu_now_ms() < end)
		ret = rcx_test(ch, &flag, st);
	if (ret)
		return ret;
	return flag ? st->error : -ETIMEDOUT;
}

bool ts_chan_early(struct rcx_req *ch)
{
	return to_chan(ch)->upwr != NULL;
}

int ts_chan_start_broken(struct tp_job *j, struct rcx_req **ch)
{
	long long end = tu_now_ms() + 30000;
	struct rcx_status st;
	int ret;

	while (to_chan(*ch)->set->state != SET_FAILED && tu_now_ms() < end)
		rcx_ctx_wait(j->ctx, 10);
	ret = rcx_start(*ch);
	return ret ? ret : ts_chan_outcome(ch, &st);
}

/* no call into the library for s seconds (it computes) */
static void stall(int s)
{
	long long end = tu_now_ms() + 1000LL * s;

	while (tu_now_ms() < end)
		usleep(10000);
}

/*
 * Rank 1: receives until one fails; 0 when it is the transport's error.
 * With stall_s, it computes that long once the message of the break came
 * (the sender's remake begins then).
 */
static int chan_broken_recv(struct rcx_req *ch, uint64_t *buf, int stall_s)
{
	struct rcx_status st;
	int k, ret = 0;

	for (k = CHAN_BREAK; k < CHAN_BREAK + 2; k++) {
		ret = rcx_start(ch);
		if (!ret)
			ret = ts_chan_outcome(&ch, &st);
		if (ret)
			break;
		/* only the message of the break may still arrive */
		TP_CHECK_EQ(k, CHAN_BREAK);
		TP_CHECK_EQ(buf[0], 1000 + (uint64_t)k);
		if (stall_s)
			stall(stall_s);
	}
	TP_CHECK_EQ(ret, RCX_ERR_TRANSPORT);
	return ret == RCX_ERR_TRANSPORT ? 0 : -1;
}

/* Nobody of the world was declared failed (j->g may be freed). */
void ts_world_none_failed(struct tp_job *j)
{
	struct rcx_group *w = NULL;
	int n = -1;

	if (!TP_CHECK_OK(rcx_group_world(j->ctx, &w)))
		return;
	TP_CHECK_OK(rcx_group_barrier(w));
	TP_CHECK_OK(rcx_group_get_failed(w, NULL, 0, &n));
	TP_CHECK_EQ(n, 0);
	TP_CHECK_OK(rcx_group_free(&w));
}

/* The group's own connection is whole: nobody failed (j->g may be
 * freed); then the channel and what chan_open made go. */
void ts_chan_close(struct tp_job *j, struct rcx_req **ch, struct rcx_req **init,
		   struct rcx_info **info)
{
	if (*ch) {
		ts_world_none_failed(j);
		TP_CHECK_OK(rcx_bind_free(ch, 1));
	}
	rcx_req_free(init);
	rcx_info_free(info);
}

/*
 * Rank 0 breaks a channel bound on *gp after CHAN_BREAK messages; when
 * free_group, both free *gp (and the persistent request) before; rank 1
 * stalls stall_s (chan_broken_recv).
 */
static void chan_broken_round(struct tp_job *j, struct rcx_group **gp,
			      const char *proto, bool free_group, int stall_s)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[1] = { 0 };
	struct rcx_status st;
	bool early;
	int k;

	if (!ts_chan_open(*gp, proto, "1", buf, &info, &init, &ch))
		goto out;
	for (k = 0; k < CHAN_BREAK; k++) {
		buf[0] = 1000 + (uint64_t)k;
		TP_CHECK_OK(rcx_start(ch));
		TP_CHECK_OK(ts_chan_outcome(&ch, &st));
		if (j->rank == 1)
			TP_CHECK_EQ(buf[0], 1000 + (uint64_t)k);
	}
	if (free_group) {
		rcx_req_free(&init);
		TP_CHECK_OK(rcx_group_free(gp));
	}
	if (j->rank == 0) {
		rcx__fault_fail_next(&to_chan(ch)->set->obj, RCX_ERR_TRANSPORT);
		buf[0] = 1000 + CHAN_BREAK;
		TP_CHECK_OK(rcx_start(ch));
		/* complete at the post (write_imm: its credit was there) */
		early = ts_chan_early(ch) && ch->state == RCX__REQ_DONE;
		if (early)
			TP_CHECK_EQ(ts_chan_outcome(&ch, &st), 0);
		else
			TP_CHECK_EQ(ts_chan_outcome(&ch, &st),
				    RCX_ERR_TRANSPORT);
		if (early)
			TP_CHECK_EQ(ts_chan_start_broken(j, &ch),
				    RCX_ERR_TRANSPORT);
		TP_CHECK_EQ(rcx_start(ch), RCX_ERR_TRANSPORT);
	} else {
		chan_broken_recv(ch, buf, stall_s);
	}
out:
	ts_chan_close(j, &ch, &init, &info);
}

static void sc_chan_broken(struct tp_job *j)
{
	chan_broken_round(j, &j->g, "send", false, 0);
	chan_broken_round(j, &j->g, "write_imm", false, 0);
}

static void sc_chan_broken_freed(struct tp_job *j)
{
	struct rcx_group *sub = NULL;

	if (TP_CHECK_OK(rcx_group_split(j->g, 0, j->rank, &sub)))
		chan_broken_round(j, &sub, "send", true, 0);
	if (sub)
		TP_CHECK_OK(rcx_group_free(&sub));
	chan_broken_round(j, &j->g, "write_imm", true, 0);
}

/*
 * A remake the peer does not take part in (it computes, making no call,
 * longer than RCX_FT_TIMEOUT_MS) cannot be made: the set fails with
 * RCX_ERR_TRANSPORT at both ends, the computing end at its next call;
 * nobody is failed.
 */
#define STALL_S 3

static void ft_short_env(void)
{
	setenv("RCX_FT_TIMEOUT_MS", "1000", 1);
}

static void sc_chan_remake_stalled(struct tp_job *j)
{
	chan_broken_round(j, &j->g, "send", false, STALL_S);
	chan_broken_round(j, &j->g, "write_imm", false, STALL_S);
}

/* RCX_FT_TIMEOUT_MS=0: no remake, a break fails the set at both ends */
static void no_remake_env(void)
{
	setenv("RCX_FT_TIMEOUT_MS", "0", 1);
}

/*
 * A set whose queue pair breaks mid-stream on a live peer is remade
 * (chan_remake.c): the stream goes on at both ends with no error, every
 * message arrives once, in order, in its slot. The fault provider fails
 * the completion of a WR that did its work, so the message of the break
 * arrived, and the flush takes the rest. Rank 0, the sender, breaks at
 * RM_BREAK0 and RM_BREAK1 (twice: the second remake of the same set);
 * for write_imm rank 1 also breaks its own queue pair, at the first
 * signaled credit write from RM_BREAK2 (RM_NMSG covers one in every
 * CH_CREDIT_SIGNAL credits, a credit in every 4 starts). Both ends count
 * the same remakes. The group bound on is freed first for write_imm:
 * the notices go over its connection all the same.
 */
#define RM_BREAK0 5
#define RM_BREAK1 20
#define RM_BREAK2 (RM_BREAK1 + 8)
#define RM_NMSG	  (RM_BREAK2 + 4 * CH_CREDIT_SIGNAL + 10)

static void chan_remake_round(struct tp_job *j, struct rcx_group **gp,
			      const char *proto, int slots, bool free_group)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[4] = { 0 };
	char sl[8];
	struct rcx_status st;
	int k, bad = 0;
	bool imm = strcmp(proto, "write_imm") == 0;

	snprintf(sl, sizeof(sl), "%d", slots);
	if (!ts_chan_open(*gp, proto, sl, buf, &info, &init, &ch))
		goto out;
	if (free_group) {
		rcx_req_free(&init);
		TP_CHECK_OK(rcx_group_free(gp));
	}
	for (k = 0; k < RM_NMSG; k++) {
		if ((j->rank == 0 && (k == RM_BREAK0 || k == RM_BREAK1)) ||
		    (j->rank == 1 && imm && k == RM_BREAK2)) {
			rcx__fault_fail_next(&to_chan(ch)->set->obj,
					     RCX_ERR_TRANSPORT);
		}
		if (j->rank == 0)
			buf[k % slots] = 1000 + (uint64_t)k;
		TP_CHECK_OK(rcx_start(ch));
		TP_CHECK_OK(ts_chan_outcome(&ch, &st));
		if (j->rank == 1)
			bad += st.slot != k % slots || st.count != 8 ||
			       buf[k % slots] != 1000 + (uint64_t)k;
	}
	TP_CHECK_EQ(bad, 0);
	/* every break was remade, and both ends remade the same times */
	TP_CHECK_EQ(to_chan(ch)->set->rm_gen, imm ? 3u : 2u);
	TP_CHECK_EQ(to_chan(ch)->set->state, SET_UP);
out:
	ts_chan_close(j, &ch, &init, &info);
}

static void sc_chan_remake(struct tp_job *j)
{
	chan_remake_round(j, &j->g, "send", 1, false);
	chan_remake_round(j, &j->g, "write_imm", 4, true);
}

/*
 * The set breaks at the receiver (rank 1) while a message it has not
 * started landed, its completion not polled (the sender, within its
 * window, sends it only once told that the receiver polls no more), and
 * the receiver starts the next receive while the set is remade. That
 * message's completion, polled then, must not end the start, which is
 * only held (it did: the start count fell one behind the sender's, then
 * a wrong slot, a duplicate or a hang).
 */
#define RH_AT 6 /* the receiver's start count at the break */

static void sc_chan_remake_early(struct tp_job *j)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[4] = { 0 };
	volatile uint64_t *vb = buf;
	struct rcx_status st;
	long long end = tu_now_ms() + 20000;
	int k, bad = 0, x = 0;

	if (!ts_chan_open(j->g, "write_imm", "4", buf, &info, &init, &ch))
		goto out;
	for (k = 0; k < 16; k++) {
		if (j->rank == 0 && k == RH_AT)
			TP_CHECK_OK(rcx_recv(j->g, &x, sizeof(x), 1, DATA_TAG,
					     NULL));
		if (j->rank == 1 && k == RH_AT) {
			TP_CHECK_OK(rcx_send(j->g, &x, sizeof(x), 0, DATA_TAG));
			/* message k lands, unpolled (where the NIC writes;
			 * shm's receiver does in its progress) */
			while (to_chan(ch)->set->credit_imm &&
			       vb[k % 4] != 1000 + (uint64_t)k &&
			       tu_now_ms() < end)
				usleep(1000);
			usleep(50000);
			rcx__lock(j->ctx);
			rcx__chan_set_fail(to_chan(ch)->set, RCX_ERR_TRANSPORT);
			rcx__unlock(j->ctx);
			TP_CHECK_EQ(to_chan(ch)->set->state, SET_REMAKE);
		}
		if (j->rank == 0)
			buf[k % 4] = 1000 + (uint64_t)k;
		TP_CHECK_OK(rcx_start(ch));
		TP_CHECK_OK(ts_chan_outcome(&ch, &st));
		if (j->rank == 1)
			bad += st.slot != k % 4 || st.count != 8 ||
			       buf[k % 4] != 1000 + (uint64_t)k;
	}
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_EQ(to_chan(ch)->set->rm_gen, 1u);
	TP_CHECK_EQ(to_chan(ch)->set->state, SET_UP);
out:
	ts_chan_close(j, &ch, &init, &info);
}

/*
 * A post of the set's own that fails where nothing waits for it (the
 * zero-length receives of a write_imm receiver, or of a credit_imm
 * sender, given back in a batch: the fault provider refuses the next
 * one) is the transport's failure, not the peer's: RCX_ERR_TRANSPORT at
 * both ends (no remake: RCX_FT_TIMEOUT_MS=0), nobody failed. It was
 * RCX_ERR_PROC_FAILED, and the other end waited.
 */
static void chan_repost_round(struct tp_job *j, int breaker)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[4] = { 0 };
	struct rcx_status st;
	int k, ret = 0;

	if (!ts_chan_open(j->g, "write_imm", "4", buf, &info, &init, &ch))
		goto out;
	/* a sender takes its credits into receives only with credit_imm */
	if (breaker == 0 && !to_chan(ch)->set->credit_imm)
		goto out;
	if (j->rank == breaker)
		rcx__fault_post_fail(&to_chan(ch)->set->obj, 1, 0, -ENOMEM);
	for (k = 0; k < 100 && !ret; k++) {
		buf[k % 4] = 1000 + (uint64_t)k;
		ret = rcx_start(ch);
		if (!ret)
			ret = ts_chan_outcome(&ch, &st);
	}
	TP_CHECK_EQ(ret, RCX_ERR_TRANSPORT);
out:
	ts_chan_close(j, &ch, &init, &info);
}

static void sc_chan_repost_fails(struct tp_job *j)
{
	chan_repost_round(j, 1);
	chan_repost_round(j, 0);
}

/*
 * Reconnection: the transport gives up on the connection in the middle
 * of a stream both ways (eager messages numbered 0 .. NSTREAM - 1, a few
 * rendezvous ones among them) with many in flight; the fault provider
 * lies about one send's completion, so that message did arrive and is
 * sent again. Each side receives every number once, in order (a
 * duplicate or a gap shows as a wrong number), nobody is failed, the
 * connection was made again, and a window epoch after the break works.
 * The side that breaks: rank 0, which accepted the connection (it asks
 * rank 1 to connect again), or rank 1, which made it.
 */
#define NSTREAM	   2000
#define BATCH	   64
#define RNDV_EVERY 250 /* every so many messages one is rendezvous */
#define BIG	   (64 * 1024)

static void reconn_env(void)
{
	/* room for the reconnection under emulation, a bound all the same */
	setenv("RCX_FT_TIMEOUT_MS", "30000", 1);
}

static size_t msg_len(int k)
{
	return k % RNDV_EVERY == RNDV_EVERY - 1 ? BIG : 8;
}

/* Messages k .. k + n - 1 both ways; their numbers are checked. */
static int stream_batch(struct tp_job *j, int k, int n, uint64_t *sbuf,
			uint64_t *rbuf)
{
	struct rcx_req *r[2 * BATCH] = { NULL };
	int peer = 1 - j->rank, i, bad = 0;
	size_t len, w;

	for (i = 0; i < n; i++) {
		len = msg_len(k + i);
		TP_CHECK_OK(rcx_irecv(j->g, rbuf + (size_t)i * (BIG / 8), len,
				      peer, DATA_TAG, &r[2 * i]));
		for (w = 0; w < len / 8; w++)
			sbuf[(size_t)i * (BIG / 8) + w] =
				ts_word(j->rank, k + i, w);
		TP_CHECK_OK(rcx_isend(j->g, sbuf + (size_t)i * (BIG / 8), len,
				      peer, DATA_TAG, &r[2 * i + 1]));
	}
	TP_CHECK_OK(rcx_waitall(2 * n, r, RCX_STATUSES_IGNORE));
	for (i = 0; i < n; i++)
		bad += ts_wrong(rbuf + (size_t)i * (BIG / 8), peer, k + i,
				msg_len(k + i) / 8) != 0;
	return bad;
}

/* lock_all epoch and a fence epoch over the remade connection */
static void epoch_after(struct tp_job *j, struct rcx_win *w, uint64_t *base)
{
	uint64_t src[NWORD / 4];
	int peer = 1 - j->rank;

	TP_CHECK_OK(rcx_win_lock_all(w));
	ts_put_get_back(j, w, 40);
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_win_fence(w, 0));
	ts_fill(src, j->rank, 41, NWORD / 4);
	TP_CHECK_OK(rcx_put(w, src, sizeof(src), peer, 2 * NWORD / 4));
	TP_CHECK_OK(rcx_win_fence(w, 0));
	TP_CHECK_EQ(
		ts_wrong(base + (size_t)peer * NWORD / 4, peer, 40, NWORD / 4),
		0);
	TP_CHECK_EQ(ts_wrong(base + 2 * NWORD / 4, peer, 41, NWORD / 4), 0);
}

static void reconn_stream(struct tp_job *j, int breaker)
{
	uint64_t *sbuf = malloc((size_t)BATCH * BIG);
	uint64_t *rbuf = malloc((size_t)BATCH * BIG), *base;
	struct rcx_stats st0, st1;
	struct rcx_win *w;
	int k, n, bad = 0;

	if (!TP_CHECK(sbuf && rbuf) || !(w = ts_make(j, &base)))
		goto out;
	memset(&st0, 0, sizeof(st0));
	st0.size = sizeof(st0);
	st1 = st0;
	TP_CHECK_OK(rcx_ctx_stats(j->ctx, &st0));
	for (k = 0; k < NSTREAM; k += n) {
		n = NSTREAM - k < BATCH ? NSTREAM - k : BATCH;
		/* the break: the third batch, with its sends in flight */
		if (k == 2 * BATCH && j->rank == breaker)
			rcx__fault_fail_next(j->g->conns[1 - j->rank],
					     RCX_ERR_TRANSPORT);
		bad += stream_batch(j, k, n, sbuf, rbuf);
	}
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_OK(rcx_ctx_stats(j->ctx, &st1));
	/* the connection was made again, here as at the peer */
	TP_CHECK(st1.connects > st0.connects);
	TP_CHECK_EQ(j->g->conns[1 - j->rank]->state, RCX__CONN_UP);
	ts_none_failed(j);
	epoch_after(j, w, base);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	ts_none_failed(j);
	TP_CHECK_OK(rcx_win_free(&w));
out:
	free(sbuf);
	free(rbuf);
}

static void sc_reconn_accepting(struct tp_job *j)
{
	reconn_stream(j, 0);
}

static void sc_reconn_connecting(struct tp_job *j)
{
	reconn_stream(j, 1);
}

/*
 * The same over a pair group (rcx_group_connect/accept, rank 0 of the
 * job accepting at the address rank 1 got from it): the connector
 * remakes the connection, naming the pair's token; the acceptor, which
 * has no address to ask, waits for it. The break on either side.
 */
static void reconn_pair(struct tp_job *j, int breaker)
{
	struct rcx_group *world = j->g, *pair = NULL;
	char addr[128] = "", addrs[2][128];

	TP_CHECK_OK(rcx_ctx_address(j->ctx, addr, sizeof(addr)));
	TP_CHECK_OK(rcx_group_allgather(world, addr, sizeof(addr), addrs));
	if (j->rank == 0)
		TP_CHECK_OK(rcx_group_accept(j->ctx, 60000, &pair));
	else
		TP_CHECK_OK(rcx_group_connect(j->ctx, addrs[0], 60000, &pair));
	if (!TP_CHECK(pair != NULL))
		return;
	TP_CHECK_EQ(rcx_group_rank(pair), j->rank);
	j->g = pair;
	reconn_stream(j, breaker);
	j->g = world;
	TP_CHECK_OK(rcx_group_free(&pair));
	ts_none_failed(j);
}

static void sc_reconn_pair_accepting(struct tp_job *j)
{
	reconn_pair(j, 0);
}

static void sc_reconn_pair_connecting(struct tp_job *j)
{
	reconn_pair(j, 1);
}

/*
 * RMA across a reconnection. Rank 1 breaks its connection to rank 0
 * with puts and gets in flight (the fault provider fails the first
 * completion, and flushes the rest as a queue pair in error would), then
 * issues more while the connection is remade: rank 0 sleeps meanwhile,
 * so it cannot be remade before they are all issued. Every op completes
 * normally at the epoch's end, every byte is checked at both ends, and
 * nobody is failed. Rank 0's window in quarters:
 *  [0] rank 1 puts round r there with the break;
 *  [1] rank 0 filled it (round r): rank 1 gets it with the break, and
 *      again while the connection is remade;
 *  [2] rank 0 filled it (round r + 1): while the connection is remade
 *      rank 1 gets each piece, orders (RCX_ORDER_ALL) and puts round
 *      r + 1 over it, so the gets must still see rank 0's data (the put
 *      fenced behind the get on the new endpoint);
 *  [3] rank 1 puts round r + 2 there while the connection is remade.
 */
#define QW    (NWORD / 4)
#define PIECE 16 /* words an operation moves */

struct rma_bufs {
	uint64_t src[3][QW];
	uint64_t got1[2][QW], got2[QW];
};

static void reconn_rma_env(void)
{
	reconn_env();
	/* nothing but the window's WRs may take the injected failure */
	unsetenv("RCX_HEARTBEAT_MS");
}

/* Progress until c is being remade (the break's completion polled). */
static void until_reconn(struct tp_job *j, struct rcx__conn *c)
{
	long long end = tu_now_ms() + 10000;

	while (c->state != RCX__CONN_RECONN && tu_now_ms() < end)
		rcx_progress(j->ctx);
	TP_CHECK_EQ(c->state, RCX__CONN_RECONN);
}

/* Arm the break on the connection to rank 0, with nothing else on it. */
static struct rcx__conn *arm_break(struct tp_job *j)
{
	struct rcx__conn *c = j->g->conns[0];
	long long end = tu_now_ms() + 10000;

	while (c->tx_inflight && tu_now_ms() < end)
		rcx_progress(j->ctx);
	TP_CHECK_EQ(c->tx_inflight, 0);
	rcx__fault_fail_next(c, RCX_ERR_TRANSPORT);
	return c;
}

/* Rank 1: the operations with the break and while it is mended. */
static void rma_break(struct tp_job *j, struct rcx_win *w, struct rma_bufs *b,
		      int r)
{
	struct rcx__conn *c;
	size_t k, n = PIECE * 8;

	ts_fill(b->src[0], 1, r, QW);
	ts_fill(b->src[1], 1, r + 1, QW);
	ts_fill(b->src[2], 1, r + 2, QW);
	memset(b->got1, 0, sizeof(b->got1));
	memset(b->got2, 0, sizeof(b->got2));
	c = arm_break(j);
	for (k = 0; k < QW; k += PIECE) {
		TP_CHECK_OK(rcx_put(w, b->src[0] + k, n, 0, k));
		TP_CHECK_OK(rcx_get(w, b->got1[0] + k, n, 0, QW + k));
	}
	until_reconn(j, c);
	for (k = 0; k < QW; k += PIECE) {
		TP_CHECK_OK(rcx_get(w, b->got1[1] + k, n, 0, QW + k));
		TP_CHECK_OK(rcx_get(w, b->got2 + k, n, 0, 2 * QW + k));
		/* issued while it is remade (where the order below waits
		 * instead of fencing, RCX_ORDER_FENCE, it waits for that) */
		if (!k)
			TP_CHECK_EQ(c->state, RCX__CONN_RECONN);
		TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_ALL));
		TP_CHECK_OK(rcx_put(w, b->src[1] + k, n, 0, 2 * QW + k));
		TP_CHECK_OK(rcx_put(w, b->src[2] + k, n, 0, 3 * QW + k));
	}
}

/* Rank 1, the epoch closed: what its gets read. */
static void rma_got(const struct rma_bufs *b, int r)
{
	TP_CHECK_EQ(ts_wrong(b->got1[0], 0, r, QW), 0);
	TP_CHECK_EQ(ts_wrong(b->got1[1], 0, r, QW), 0);
	TP_CHECK_EQ(ts_wrong(b->got2, 0, r + 1, QW), 0);
}

/* Rank 0: its window before the epoch, and what rank 1 put there. */
static void rma_prefill(struct tp_job *j, uint64_t *base, int r)
{
	if (j->rank != 0)
		return;
	ts_fill(base + QW, 0, r, QW);
	ts_fill(base + 2 * QW, 0, r + 1, QW);
}

static void rma_landed(struct tp_job *j, const uint64_t *base, int r)
{
	if (j->rank != 0)
		return;
	TP_CHECK_EQ(ts_wrong(base, 1, r, QW), 0);
	TP_CHECK_EQ(ts_wrong(base + 2 * QW, 1, r + 1, QW), 0);
	TP_CHECK_EQ(ts_wrong(base + 3 * QW, 1, r + 2, QW), 0);
}

/* The connection was made again (here as at the peer), nobody failed. */
static void mended(struct tp_job *j, const struct rcx_stats *st0)
{
	struct rcx_stats st1;

	memset(&st1, 0, sizeof(st1));
	st1.size = sizeof(st1);
	TP_CHECK_OK(rcx_ctx_stats(j->ctx, &st1));
	TP_CHECK(st1.connects > st0->connects);
	TP_CHECK_EQ(j->g->conns[1 - j->rank]->state, RCX__CONN_UP);
	ts_none_failed(j);
}

/* The window (rank 0's filled for round r), and the counts before. */
static struct rcx_win *rma_start(struct tp_job *j, uint64_t **base,
				 struct rcx_stats *st0, int r)
{
	struct rcx_win *w = ts_make(j, base);

	memset(st0, 0, sizeof(*st0));
	st0->size = sizeof(*st0);
	TP_CHECK_OK(rcx_ctx_stats(j->ctx, st0));
	if (w)
		rma_prefill(j, *base, r);
	return w;
}

/* lock_all epoch: the break in the middle, then a flush. */
static void sc_reconn_rma_lockall(struct tp_job *j)
{
	static struct rma_bufs b;
	struct rcx_stats st0;
	struct rcx_win *w;
	uint64_t *base;

	if (!(w = rma_start(j, &base, &st0, 60)))
		return;
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1) {
		rma_break(j, w, &b, 60);
		TP_CHECK_OK(rcx_win_flush(w, 0));
		rma_got(&b, 60);
		ts_tell(j, DATA_TAG);
	} else {
		ts_nap_then_hear(j, DATA_TAG);
	}
	mended(j, &st0);
	/* and the epoch goes on over the new connection */
	ts_put_get_back(j, w, 63);
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	rma_landed(j, base, 60);
	ts_none_failed(j);
	TP_CHECK_OK(rcx_win_free(&w));
}

/* Fence epoch: the break in the middle, then the closing fence. */
static void sc_reconn_rma_fence(struct tp_job *j)
{
	static struct rma_bufs b;
	struct rcx_stats st0;
	struct rcx_win *w;
	uint64_t *base;

	if (!(w = rma_start(j, &base, &st0, 70)))
		return;
	TP_CHECK_OK(rcx_win_fence(w, 0));
	if (j->rank == 1)
		rma_break(j, w, &b, 70);
	else
		sleep(TS_NAP_S);
	TP_CHECK_OK(rcx_win_fence(w, 0));
	if (j->rank == 1)
		rma_got(&b, 70);
	rma_landed(j, base, 70);
	mended(j, &st0);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * Post/start/complete/wait: rank 0 exposes its window to rank 1 and
 * sleeps; rank 1's access epoch has the break in the middle, its
 * complete notice goes behind the ops on the new connection, and rank
 * 0's wait sees them all.
 */
static void sc_reconn_rma_pscw(struct tp_job *j)
{
	static struct rma_bufs b;
	int peer = 1 - j->rank;
	struct rcx_stats st0;
	struct rcx_win *w;
	uint64_t *base;

	if (!(w = rma_start(j, &base, &st0, 90)))
		return;
	if (j->rank == 1) {
		TP_CHECK_OK(rcx_win_start(w, 1, &peer, 0));
		rma_break(j, w, &b, 90);
		TP_CHECK_OK(rcx_win_complete(w));
		rma_got(&b, 90);
	} else {
		TP_CHECK_OK(rcx_win_post(w, 1, &peer, 0));
		sleep(TS_NAP_S);
		TP_CHECK_OK(rcx_win_wait(w));
		rma_landed(j, base, 90);
	}
	mended(j, &st0);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * An atomic in flight at the break may have run at the target: it
 * reports RCX_ERR_TRANSPORT and is not sent again; one issued while the
 * connection is remade runs once, after it. Rank 0's counter ends at
 * 1 + 10, and the second fetch saw 1. A software accumulate (a message)
 * in flight at the break and one issued meanwhile each run once: 7 + 7.
 */
static void sc_reconn_rma_atomic(struct tp_job *j)
{
	int64_t one = 1, ten = 10, old1 = -1, old2 = -1;
	int32_t seven = 7, *sw;
	struct rcx_stats st0;
	struct rcx__conn *c;
	struct rcx_win *w;
	uint64_t *base;

	if (!(w = rma_start(j, &base, &st0, 80)))
		return;
	sw = (int32_t *)(base + 3 * QW);
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1) {
		c = arm_break(j);
		TP_CHECK_OK(rcx_fetch_and_op(w, &one, &old1, RCX_INT64, 0, 0,
					     RCX_SUM));
		TP_CHECK_OK(rcx_accumulate(w, &seven, 1, RCX_INT32, 0, 3 * QW,
					   RCX_SUM));
		until_reconn(j, c);
		TP_CHECK_OK(rcx_fetch_and_op(w, &ten, &old2, RCX_INT64, 0, 0,
					     RCX_SUM));
		TP_CHECK_OK(rcx_accumulate(w, &seven, 1, RCX_INT32, 0, 3 * QW,
					   RCX_SUM));
		TP_CHECK_EQ(c->state, RCX__CONN_RECONN);
		TP_CHECK_EQ(rcx_win_flush(w, 0), RCX_ERR_TRANSPORT);
		TP_CHECK_EQ(old2, 1);
		ts_tell(j, DATA_TAG);
	} else {
		ts_nap_then_hear(j, DATA_TAG);
	}
	mended(j, &st0);
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0) {
		TP_CHECK_EQ(base[0], 11);
		TP_CHECK_EQ(*sw, 14);
	}
	ts_none_failed(j);
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * Lock words across a break: rank 1 takes a shared lock on rank 0
 * (lock_all), then an exclusive one, each time with the completion of
 * the lock's first WR failing as the transport's would. Each lock is
 * taken once, with no error, and leaves nothing behind at unlock: rank 0
 * then takes its own exclusive lock, which a shared count or an
 * exclusive mark left over would keep from it forever.
 */
static void sc_reconn_rma_lock(struct tp_job *j)
{
	struct rcx_stats st0;
	uint64_t *base, v;
	struct rcx_win *w;
	int round;

	if (!(w = ts_make(j, &base)))
		return;
	for (round = 0; round < 2; round++) {
		memset(&st0, 0, sizeof(st0));
		st0.size = sizeof(st0);
		TP_CHECK_OK(rcx_ctx_stats(j->ctx, &st0));
		TP_CHECK_OK(rcx_group_barrier(j->g));
		if (j->rank == 1) {
			arm_break(j);
			TP_CHECK_OK(
				round ? rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, 0)
				      : rcx_win_lock_all(w));
			v = 500 + (uint64_t)round;
			TP_CHECK_OK(
				rcx_put(w, &v, 8, 0, 3 * QW + (size_t)round));
			TP_CHECK_OK(round ? rcx_win_unlock(w, 0)
					  : rcx_win_unlock_all(w));
			ts_tell(j, DATA_TAG);
		} else {
			ts_nap_then_hear(j, DATA_TAG);
		}
		mended(j, &st0);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0) {
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, 0));
		TP_CHECK_EQ(base[3 * QW], 500);
		TP_CHECK_EQ(base[3 * QW + 1], 501);
		TP_CHECK_OK(rcx_win_unlock(w, 0));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	ts_none_failed(j);
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * A clean exit right after a break: rank 1's connection to rank 0 is
 * being remade (a send's completion failed) when rank 1 frees the world
 * and leaves. The exit waits for the new connection, so the peer gets
 * the message once and a BYE, and rank 1 is not failed at rank 0 (an
 * exit that did not wait left without a BYE: a death, for the peer).
 */
static void sc_reconn_exit(struct tp_job *j)
{
	uint64_t v = 5, in = 0;
	long long end;
	struct rcx__conn *c;
	int n = -1;

	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1) {
		c = arm_break(j);
		TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), 0, DATA_TAG));
		until_reconn(j, c);
	} else {
		TP_CHECK_OK(rcx_recv(j->g, &in, sizeof(in), 1, DATA_TAG, NULL));
		TP_CHECK_EQ(in, v);
		/* until rank 1 left: it said BYE, or it is failed */
		c = j->g->conns[1];
		end = tu_now_ms() + 60000;
		while (c->state != RCX__CONN_CLOSED &&
		       c->state != RCX__CONN_FAILED && tu_now_ms() < end)
			rcx_ctx_wait(j->ctx, 10);
		TP_CHECK_EQ(c->state, RCX__CONN_CLOSED);
		TP_CHECK_OK(rcx_group_get_failed(j->g, NULL, 0, &n));
		TP_CHECK_EQ(n, 0);
	}
	/* no final barrier: rank 1 leaves at once */
	TP_CHECK_OK(rcx_group_free(&j->g));
}

static const struct tp_scenario scenarios[] = {
	{ .name = "fence", .run = sc_fence, .size = 2 },
	{ .name = "lock", .run = sc_lock, .size = 2 },
	{ .name = "lockall", .run = sc_lockall, .size = 2 },
	{ .name = "p2p", .run = sc_p2p, .size = 2 },
	{ .name = "chan", .run = sc_chan, .size = 2 },
	TS_FAULT_SC("transport", sc_transport, ft_timeout_env),
	TS_FAULT_SC("chan_broken", sc_chan_broken, no_remake_env),
	TS_FAULT_SC("chan_broken_freed", sc_chan_broken_freed, no_remake_env),
	TS_FAULT_SC("chan_remake", sc_chan_remake, ft_timeout_env),
	TS_FAULT_SC("chan_remake_stalled", sc_chan_remake_stalled,
		    ft_short_env),
	TS_FAULT_SC("chan_remake_early", sc_chan_remake_early, ft_timeout_env),
	TS_FAULT_SC("chan_repost_fails", sc_chan_repost_fails, no_remake_env),
	TS_FAULT_SC("reconn_accepting", sc_reconn_accepting, reconn_env),
	TS_FAULT_SC("reconn_connecting", sc_reconn_connecting, reconn_env),
	TS_FAULT_SC("reconn_pair_accepting", sc_reconn_pair_accepting,
		    reconn_env),
	TS_FAULT_SC("reconn_pair_connecting", sc_reconn_pair_connecting,
		    reconn_env),
	TS_FAULT_SC("reconn_rma_lockall", sc_reconn_rma_lockall,
		    reconn_rma_env),
	TS_FAULT_SC("reconn_rma_fence", sc_reconn_rma_fence, reconn_rma_env),
	TS_FAULT_SC("reconn_rma_pscw", sc_reconn_rma_pscw, reconn_rma_env),
	TS_FAULT_SC("reconn_rma_atomic", sc_reconn_rma_atomic, reconn_rma_env),
	TS_FAULT_SC("reconn_rma_lock", sc_reconn_rma_lock, reconn_rma_env),
	TS_FAULT_SC("reconn_exit", sc_reconn_exit, reconn_rma_env),
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("stop", scenarios, TP_COUNT(scenarios), argc, argv);
}

const struct tu_peer tu_peer_stop = { "stop", peer_main };

void ts_ft_job(const char *role, const char *scenario)
{
	setenv("RCX_RUN_FT", "1", 1);
	setenv("RCX_HEARTBEAT_MS", "100", 1);
	CU_ASSERT_EQUAL(tu_mp_run(2, role, scenario, 120), 0);
	unsetenv("RCX_HEARTBEAT_MS");
	unsetenv("RCX_RUN_FT");
}

/* one CUnit case per scenario */
#define STOP_TEST(name)                   \
	static void test_##name(void)     \
	{                                 \
		ts_ft_job("stop", #name); \
	}

STOP_TEST(fence)
STOP_TEST(lock)
STOP_TEST(lockall)
STOP_TEST(p2p)
STOP_TEST(chan)
STOP_TEST(transport)
STOP_TEST(chan_broken)
STOP_TEST(chan_broken_freed)
STOP_TEST(chan_remake)
STOP_TEST(chan_remake_stalled)
STOP_TEST(chan_remake_early)
STOP_TEST(chan_repost_fails)
STOP_TEST(reconn_accepting)
STOP_TEST(reconn_connecting)
STOP_TEST(reconn_pair_accepting)
STOP_TEST(reconn_pair_connecting)
STOP_TEST(reconn_rma_lockall)
STOP_TEST(reconn_rma_fence)
STOP_TEST(reconn_rma_pscw)
STOP_TEST(reconn_rma_atomic)
STOP_TEST(reconn_rma_lock)
STOP_TEST(reconn_exit)

static const CU_TestInfo tests[] = {
	{ "stopped_in_fence_epoch", test_fence },
	{ "stopped_target_of_lock_unlock", test_lock },
	{ "stopped_in_lock_all_flush", test_lockall },
	{ "stopped_in_p2p_exchange", test_p2p },
	{ "stopped_receiver_of_channel_stream", test_chan },
	{ "transport_gives_up_on_live_peer", test_transport },
	{ "channel_transport_gives_up_both_ends_told", test_chan_broken },
	{ "channel_transport_gives_up_group_freed_first_both_told",
	  test_chan_broken_freed },
	{ "channel_broken_mid_stream_remade_exactly_once", test_chan_remake },
	{ "channel_remake_peer_stalled_fails_both_ends_transport",
	  test_chan_remake_stalled },
	{ "channel_remade_message_before_held_start_counts_once",
	  test_chan_remake_early },
	{ "channel_repost_failure_is_transport_at_both_ends",
	  test_chan_repost_fails },
	{ "reconnect_stream_broken_at_acceptor", test_reconn_accepting },
	{ "reconnect_stream_broken_at_connector", test_reconn_connecting },
	{ "reconnect_pair_stream_broken_at_acceptor",
	  test_reconn_pair_accepting },
	{ "reconnect_pair_stream_broken_at_connector",
	  test_reconn_pair_connecting },
	{ "reconnect_rma_lock_all_epoch_replayed", test_reconn_rma_lockall },
	{ "reconnect_rma_fence_epoch_replayed", test_reconn_rma_fence },
	{ "reconnect_rma_pscw_epoch_replayed", test_reconn_rma_pscw },
	{ "reconnect_atomic_in_flight_reports_transport_once",
	  test_reconn_rma_atomic },
	{ "reconnect_lock_word_broken_taken_once", test_reconn_rma_lock },
	{ "reconnect_then_clean_exit_delivers_and_says_bye", test_reconn_exit },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_stop = {
	"stop", TU_DEVICE, NULL, NULL, tests,
};

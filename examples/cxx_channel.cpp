// SPDX-License-Identifier: BSD-2-Clause
/*
 * rcx from C++17: the C API with RAII owners. A bound channel streams
 * a std::vector from rank 0 to rank 1 through 4 circular slots; rank 1
 * checks every element and both ranks print what they saw.
 *
 *	rcx-run -n 2 ./cxx_channel [MESSAGES]
 */
#include <rcx/rcx.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// An rcx call that failed: its name for the error, and where.
struct rcx_failure : std::runtime_error {
	rcx_failure(int code, const char *what)
		: std::runtime_error(std::string(what) + ": " +
				     rcx_strerror(code))
	{
	}
};

int check(int ret, const char *what)
{
	if (ret < 0)
		throw rcx_failure(ret, what);
	return ret;
}

struct ctx_free {
	void operator()(rcx_ctx *c) const { rcx_ctx_destroy(c); }
};
struct group_free {
	void operator()(rcx_group *g) const { rcx_group_free(&g); }
};
struct req_free {
	void operator()(rcx_req *r) const { rcx_req_free(&r); }
};
struct info_free {
	void operator()(rcx_info *i) const { rcx_info_free(&i); }
};
using ctx_ptr = std::unique_ptr<rcx_ctx, ctx_free>;
using group_ptr = std::unique_ptr<rcx_group, group_free>;
using req_ptr = std::unique_ptr<rcx_req, req_free>;
using info_ptr = std::unique_ptr<rcx_info, info_free>;

constexpr int slots = 4;
constexpr std::size_t elems = 512;

std::uint64_t value(long msg, std::size_t i)
{
	return static_cast<std::uint64_t>(msg) * 1000003u + i;
}

int run(long messages)
{
	rcx_ctx *c = nullptr;
	check(rcx_ctx_create(nullptr, &c), "rcx_ctx_create");
	ctx_ptr ctx(c);
	rcx_group *g = nullptr;
	check(rcx_group_world(ctx.get(), &g), "rcx_group_world");
	group_ptr world(g);
	if (rcx_group_size(g) != 2) {
		std::fprintf(stderr, "needs two ranks: rcx-run -n 2 PROGRAM\n");
		return 2;
	}
	const int me = rcx_group_rank(g);

	// slots consecutive buffers; start k uses slot k % slots
	std::vector<std::uint64_t> buf(elems * slots);
	const std::size_t stride = elems * sizeof(std::uint64_t);
	rcx_info *i = nullptr;
	check(rcx_info_create(&i), "rcx_info_create");
	info_ptr info(i);
	check(rcx_info_set(i, RCX_CHAN_SLOTS, std::to_string(slots).c_str()),
	      "rcx_info_set");
	check(rcx_info_set(i, RCX_CHAN_STRIDE,
			   std::to_string(stride).c_str()),
	      "rcx_info_set");

	rcx_req *init = nullptr;
	if (me == 0)
		check(rcx_send_init(g, buf.data(), stride, 1, 7, &init),
		      "rcx_send_init");
	else
		check(rcx_recv_init(g, buf.data(), stride, 0, 7, &init),
		      "rcx_recv_init");
	req_ptr init_owner(init);
	rcx_req *ch = nullptr;
	check(rcx_bind(init, info.get(), &ch), "rcx_bind");

	std::size_t wrong = 0;
	for (long m = 0; m < messages; m++) {
		std::uint64_t *slot = buf.data() + (m % slots) * elems;
		if (me == 0)
			for (std::size_t k = 0; k < elems; k++)
				slot[k] = value(m, k);
		rcx_status st{};
		check(rcx_start(ch), "rcx_start");
		check(rcx_wait(&ch, &st), "rcx_wait");
		if (me == 1)
			for (std::size_t k = 0; k < elems; k++)
				wrong += slot[k] != value(m, k);
	}
	check(rcx_bind_free(&ch, 1), "rcx_bind_free");
	check(rcx_group_barrier(g), "rcx_group_barrier");
	if (me == 0)
		std::printf("rank 0: sent %ld messages of %zu bytes\n",
			    messages, stride);
	else
		std::printf("rank 1: received %ld messages, %zu wrong "
			    "elements\n",
			    messages, wrong);
	return wrong ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
	long messages = argc > 1 ? std::atol(argv[1]) : 1000;
	try {
		return run(messages < 1 ? 1 : messages);
	} catch (const rcx_failure &e) {
		std::fprintf(stderr, "%s\n", e.what());
		return 1;
	}
}

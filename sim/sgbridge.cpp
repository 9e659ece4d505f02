/*
 * sgbridge.cpp - actor-less SimGrid activities with a completion callback
 * (see sgbridge.h).  A started activity stays referenced in `live` until it
 * completes: SimGrid requires it, and it is how the tag is found again.
 */
#include "sim/sgbridge.h"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>
#include <unordered_map>
#include <vector>

namespace sg4 = simgrid::s4u;

static sgb_done_fn done_fn;
static void* done_ctx;
static bool registered;
static std::unordered_map<const sg4::Activity*, sg4::ActivityPtr> live;
/* Completed activities, kept until SimGrid has finished with them: the
 * completion signal fires inside EngineImpl::handle_ended_actions, which
 * still reads the activity after the callbacks return, so dropping the last
 * reference there is a use after free (valgrind shows it; ASan cannot see
 * into libsimgrid).  They are released when simulated time next advances,
 * by which time that pass is over, and at the end of sgb_run. */
static std::vector<sg4::ActivityPtr> ended;
/* Delays set and not yet over (sgb_delay). */
static long pending;

extern "C" void sgb_init(sgb_done_fn fn, void* ctx)
{
  done_fn = fn;
  done_ctx = ctx;
  if (registered)
    return; /* SimGrid's signal has no disconnect: connect once */
  registered = true;
  sg4::Activity::on_completion_cb([](sg4::Activity const& a) {
    auto it = live.find(&a);
    if (it == live.end())
      return; /* not ours */
    ended.push_back(std::move(it->second));
    live.erase(it);
    done_fn(done_ctx, a.get_data<void>());
  });
  sg4::Engine::on_time_advance_cb([](double) { ended.clear(); });
}

extern "C" void sgb_comm(sg_host_t src, sg_host_t dst, double bytes, void* tag)
{
  sg4::CommPtr c = sg4::Comm::sendto_init(src, dst);
  c->set_payload_size((uint64_t)(bytes + 0.5));
  c->set_data(tag);
  live[c.get()] = c;
  c->start();
}

extern "C" void sgb_delay(double seconds, void* tag)
{
  pending++;
  simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock() + seconds, [tag] {
    pending--;
    done_fn(done_ctx, tag);
  });
}

extern "C" void sgb_run(void)
{
  sg4::Engine::get_instance()->run();
  ended.clear();
}

extern "C" double sgb_now(void)
{
  return sg4::Engine::get_clock();
}

extern "C" long sgb_live(void)
{
  return (long)live.size() + pending;
}

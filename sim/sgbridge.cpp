/*
 * sgbridge.cpp - actor-less SimGrid activities with a completion callback
 * (see sgbridge.h).  A started activity stays referenced in `live` until it
 * completes: SimGrid requires it, and it is how the tag is found again.
 */
#include "sim/sgbridge.h"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
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

/* The in-memory zone (sgbridge.h).  Hosts are its only netpoints, so a
 * netpoint's id is its host's creation order. */
namespace {
namespace rt = simgrid::kernel::routing;
using LinkPtr = simgrid::kernel::resource::StandardLinkImpl*;

class ComputedZone : public rt::NetZoneImpl {
public:
  ComputedZone(const std::string& name, sgb_route_fn fn, void* ctx, int max)
      : NetZoneImpl(name), fn_(fn), ctx_(ctx), links_(max), dirs_(max)
  {
  }
  std::vector<LinkPtr> up, down;
  std::vector<double> lat;

  void get_local_route(const rt::NetPoint* src, const rt::NetPoint* dst,
                       rt::Route* into, double* latency) override
  {
    double extra = 0;
    int n = fn_(ctx_, (long)src->id(), (long)dst->id(), links_.data(),
                dirs_.data(), &extra);
    for (int i = 0; i < n; i++) {
      int32_t l = links_[(size_t)i];
      into->link_list_.push_back(dirs_[(size_t)i] ? down[(size_t)l]
                                                  : up[(size_t)l]);
      if (latency)
        *latency += lat[(size_t)l];
    }
    if (latency)
      *latency += extra;
  }

private:
  sgb_route_fn fn_;
  void* ctx_;
  std::vector<int32_t> links_, dirs_;
};

ComputedZone* zone;
} // namespace

extern "C" void sgb_zone_begin(const char* name, sgb_route_fn route,
                               void* ctx, int max_hops)
{
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  zone = new ComputedZone(name, route, ctx, max_hops);
}

extern "C" void sgb_zone_link(const char* name, double bw, double lat)
{
  sg4::SplitDuplexLink* l = zone->create_split_duplex_link(name, {bw});
  l->set_latency(lat);
  l->seal();
  zone->up.push_back(l->get_link_up()->get_impl());
  zone->down.push_back(l->get_link_down()->get_impl());
  zone->lat.push_back(lat);
}

extern "C" sg_host_t sgb_zone_host(const char* name, double speed)
{
  return zone->create_host(name, {speed});
}

extern "C" void sgb_zone_end(void)
{
  zone->seal();
  sg4::Engine::get_instance()->seal_platform();
}

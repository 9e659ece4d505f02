/*
 * sgbridge.cpp - actor-less SimGrid activities with a completion callback
 * (see sgbridge.h).  A started activity stays referenced in `live` until it
 * completes: SimGrid requires it, and it is how the tag is found again.
 */
#include "sim/sgbridge.h"

#include <boost/heap/fibonacci_heap.hpp>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/utility.hpp>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace sg4 = simgrid::s4u;

static sgb_done_fn done_fn;
static void* done_ctx;
static bool registered;
static std::unordered_map<const sg4::Activity*, sg4::ActivityPtr> live;
/* The implementation of the last comm sgb_comm started (sgb_comm_weighted). */
static const simgrid::kernel::activity::ActivityImpl* last_comm;
/* Completed activities, kept until SimGrid has finished with them: the
 * completion signal fires inside EngineImpl::handle_ended_actions, which
 * still reads the activity after the callbacks return, so dropping the last
 * reference there is a use after free (valgrind shows it; ASan cannot see
 * into libsimgrid).  They are released when simulated time next advances,
 * by which time that pass is over, and at the end of sgb_run. */
static std::vector<sg4::ActivityPtr> ended;
/* Delays set and not yet over (sgb_delay). */
static long pending;

/* ---- The calendar: delays kept by weft -------------------------------
 *
 * Most of a replay's events are delays (kernels, fixed latencies), and
 * each SimGrid timer costs an allocation and a Fibonacci-heap push and
 * pop, and each instant a pass of SimGrid's loop (solve, the models'
 * next events, handle_ended_actions twice).  Without couriers, delays
 * are kept here instead, in a Fibonacci heap of the same kind as
 * SimGrid's timer heap (kernel_timers: dates compared alone), pushed and
 * popped in the same sequence, so that delays due at one instant come out
 * in the same order as SimGrid's timers did (not in the order set: the
 * heap's structure decides, and the flows they start share links in that
 * order).  While flows are in flight SimGrid runs as before, and one proxy
 * timer at the calendar's first date stands for all of it; while none is,
 * the calendar is replayed by sgb_run's own loop and SimGrid is not
 * entered at all.  The clock moves exactly as SimGrid's would (solve adds
 * date - now to now, again while short of the date), and when a flow
 * starts after such a stretch SimGrid's clock is brought to the same
 * value (sync_clock), so every flow starts when it did before. */
using DueQelt = std::pair<double, void*>;
/* The heap's nodes come from a free list, emptied at the end of each
 * replay (sgb_run): a node per delay from malloc cost 9 % of GPT-3 175B
 * on 2048 A100.  The list runs through the freed nodes themselves, so
 * giving a node back cannot fail and nothing is destroyed at exit before
 * the heap. */
namespace {
template <class T> struct Recycler {
  static_assert(sizeof(T) >= sizeof(void*), "a node holds the list's link");
  using value_type = T;
  Recycler() = default;
  template <class U> Recycler(const Recycler<U>&) {}
  static void*& head()
  {
    static void* h;
    return h;
  }
  T* allocate(std::size_t n)
  {
    if (n == 1 && head()) {
      void* p = head();
      head() = *static_cast<void**>(p);
      return static_cast<T*>(p);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept
  {
    if (n != 1) {
      ::operator delete(p);
      return;
    }
    *reinterpret_cast<void**>(p) = head();
    head() = p;
  }
  static void release()
  {
    while (void* p = head()) {
      head() = *static_cast<void**>(p);
      ::operator delete(p);
    }
  }
  template <class U> bool operator==(const Recycler<U>&) const { return true; }
  template <class U> bool operator!=(const Recycler<U>&) const { return false; }
};
} // namespace
static boost::heap::fibonacci_heap<
    DueQelt, boost::heap::compare<simgrid::xbt::HeapComparator<DueQelt>>,
    boost::heap::allocator<Recycler<DueQelt>>>
    cal;
static bool own_cal;            /* this run keeps delays here (no couriers) */
static bool outside;            /* set from outside SimGrid's loop */
static double out_now;          /* the clock there */
static bool draining;
static std::vector<double> armed; /* dates of proxy timers not yet fired */
static bool cal_off;            /* sgb_calendar(false): SimGrid timers */
static long cal_outside;        /* delays handed over by sgb_run's loop */

static double clock_now()
{
  return outside ? out_now : sg4::Engine::get_clock();
}

/* Hand over every delay due by `t`, in order (a delay of zero set
 * meanwhile is due too, as in Timer::execute_all). */
static void drain(double t)
{
  draining = true;
  while (!cal.empty() && cal.top().first <= t) {
    void* tag = cal.top().second;
    cal.pop();
    pending--;
    cal_outside += outside;
    done_fn(done_ctx, tag);
  }
  draining = false;
}

static void proxy(double date);

/* Make SimGrid stop at `date` (inside its loop: a proxy timer, unless an
 * earlier one will already stop it). */
static void arm(double date)
{
  for (double a : armed)
    if (a <= date)
      return;
  armed.push_back(date);
  simgrid::kernel::timer::Timer::set(date, [date] { proxy(date); });
}

static void proxy(double date)
{
  for (size_t i = 0; i < armed.size(); i++)
    if (armed[i] == date) {
      armed[i] = armed.back();
      armed.pop_back();
      break;
    }
  drain(sg4::Engine::get_clock());
  /* SimGrid's run goes on while flows are in flight or another proxy is
   * set, and must then stop at the calendar's next date; with neither it
   * ends after this instant and sgb_run's loop takes over. */
  if (!cal.empty() && (!live.empty() || !armed.empty()))
    arm(cal.top().first);
}

/* Bring SimGrid's clock, left behind by sgb_run's loop, to out_now.
 * run_until(m) moves it in one step, to s + (m - s), which can miss
 * out_now by a rounding (a tie rounded to even when out_now - s falls in
 * out_now's binade; review found about one sync in 5000) where SimGrid,
 * stopping at every instant, reached it exactly.  From a clock c in
 * [out_now / 2, out_now], out_now - c is exact (Sterbenz) and so is the
 * sum: a first step to 0.75 out_now makes the second land on it. */
static void sync_clock()
{
  double s = sg4::Engine::get_clock();
  if (s >= out_now)
    return;
  if (s + (out_now - s) != out_now)
    sg4::Engine::get_instance()->run_until(0.75 * out_now);
  sg4::Engine::get_instance()->run_until(out_now);
  xbt_assert(sg4::Engine::get_clock() == out_now,
             "weft: SimGrid's clock %.17g missed the calendar's %.17g",
             sg4::Engine::get_clock(), out_now);
}

/* ---- Couriers: flows sent by actors ------------------------------------
 *
 * A Comm::sendto_init comm is detached into maestro's list of activities,
 * and SimGrid 3.32 takes each finished one out of that list by a linear
 * scan (CommImpl::finish), so a flow costs time in proportion to the flows
 * in flight: quadratic in the concurrency of all-to-alls over thousands of
 * GPUs.  For the jobs where that term grows large (the engine's choice,
 * sgb_couriers_auto) every flow is sent instead by a courier actor of the
 * source host through the mailbox of the destination host, whose courier
 * is its permanent receiver: such comms are not detached, and each sits
 * only in its two couriers' short lists.  Their completion is seen by
 * Link::on_communication_state_change, handed to the engine at the same
 * instant by a timer, and the couriers then wait on them to take them out
 * of their lists.  The flow itself is the same: the same hosts, bytes and
 * start time, on the same network model.  All flows or none: SimGrid's
 * shares depend on the order in which the flows of one instant start, and
 * mixing the two ways reorders them (review: +0.06 % on a torus job), where
 * every flow by courier gave the same results as none on every job tried
 * (tests/test_engine.c, couriers_are_exact). */
struct Courier;
struct AFlow {
  void* tag;
  uint64_t bytes;
  sg4::CommPtr send, recv;
  Courier *src, *dst;
  const void* key; /* the comm's CommImpl, once sent */
  bool flushed;    /* over, and handed to the engine */
};
struct Courier {
  sg4::Mailbox* mbox;
  sg4::SemaphorePtr bell;
  bool rung, quit;
  std::vector<AFlow*> out;        /* flows to send */
  long incoming;                  /* flows pushed to mbox, to receive */
  std::vector<sg4::CommPtr> reap; /* finished comms to wait on */
};
/* AddressSanitizer cannot follow SimGrid's switches between actor stacks
 * (it warns that false reports may follow), so a sanitized build sends
 * every flow detached unless told otherwise; valgrind checks couriers. */
#if defined(__SANITIZE_ADDRESS__)
#define COURIERS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COURIERS_SANITIZED 1
#endif
#endif
#ifndef COURIERS_SANITIZED
#define COURIERS_SANITIZED 0
#endif
static int courier_force = -1; /* sgb_couriers: -1 the engine's choice */
static bool couriers_on;
static std::unordered_map<sg4::Host*, Courier*> couriers;
static std::unordered_map<const void*, AFlow*> aflows; /* by CommImpl */
/* Flows in flight by their tag, for sgb_comm_remaining: couriers' until
 * flushed, detached comms' until completed. */
static std::unordered_map<const void*, AFlow*> aflow_tags;
static std::unordered_map<const void*, sg4::Comm*> comm_tags;
static bool track; /* sgb_track */
static long aflows_pending; /* asked for, not yet over */
static long aflows_total;   /* sent by couriers, ever */
static std::vector<AFlow*> finished;
static bool flush_set;
static char payload;
static void* sink;

static void ring(Courier* c)
{
  if (c->rung)
    return;
  c->rung = true;
  c->bell->release();
}

static void courier_main(Courier* c)
{
  for (;;) {
    c->bell->acquire();
    c->rung = false;
    /* Each simcall below lets maestro run callbacks that may queue more;
     * the loops re-read the sizes. */
    for (size_t i = 0; i < c->out.size(); i++) {
      AFlow* f = c->out[i];
      f->send = f->dst->mbox->put_init(&payload, f->bytes);
      f->send->start();
      f->key = f->send->get_impl();
      aflows[f->key] = f;
      f->dst->incoming++;
      ring(f->dst);
    }
    c->out.clear();
    while (c->incoming > 0) {
      c->incoming--;
      /* The oldest comm pushed to the mailbox, not necessarily the flow
       * that rang: found again by its CommImpl. */
      sg4::CommPtr r = c->mbox->get_init()->set_dst_data(&sink, sizeof sink);
      r->start();
      auto it = aflows.find(r->get_impl());
      xbt_assert(it != aflows.end(), "weft: a courier received a comm it did not send");
      AFlow* f = it->second;
      if (f->flushed) { /* over before received (not seen to happen) */
        c->reap.push_back(std::move(r));
        aflows.erase(it);
        delete f;
      } else {
        f->recv = std::move(r);
      }
    }
    for (size_t i = 0; i < c->reap.size(); i++)
      c->reap[i]->wait(); /* over: takes it out of this actor's list */
    c->reap.clear();
    if (c->quit && c->out.empty() && c->incoming == 0)
      return;
  }
}

static Courier* courier(sg4::Host* h)
{
  auto it = couriers.find(h);
  if (it != couriers.end())
    return it->second;
  auto* c = new Courier{sg4::Mailbox::by_name("weft-courier-" + h->get_name()),
                        sg4::Semaphore::create(0), false, false, {}, 0, {}};
  sg4::ActorPtr a = sg4::Actor::create("weft-courier", h, [c] { courier_main(c); });
  c->mbox->set_receiver(a);
  couriers[h] = c;
  return c;
}

static void maybe_quit();

/* The flows over at this instant, in the order SimGrid ended them. */
static void flush()
{
  flush_set = false;
  std::vector<AFlow*> batch;
  batch.swap(finished);
  for (AFlow* f : batch) {
    f->src->reap.push_back(std::move(f->send));
    ring(f->src);
    f->flushed = true;
    void* tag = f->tag;
    aflow_tags.erase(tag);
    if (f->recv) {
      f->dst->reap.push_back(std::move(f->recv));
      ring(f->dst);
      aflows.erase(f->key);
      delete f;
    } /* else its courier has not received it yet, and will */
    aflows_pending--;
    done_fn(done_ctx, tag);
  }
  maybe_quit();
}

static void on_flow_state(simgrid::kernel::resource::NetworkAction& na,
                          simgrid::kernel::resource::Action::State)
{
  /* NetworkAction (a private header) derives from Action alone, public
   * and first: the same object. */
  auto& a = reinterpret_cast<simgrid::kernel::resource::Action&>(na);
  auto st = a.get_state();
  if (st != simgrid::kernel::resource::Action::State::FINISHED &&
      st != simgrid::kernel::resource::Action::State::FAILED)
    return;
  auto it = aflows.find(a.get_activity());
  if (it == aflows.end() || it->second->flushed)
    return; /* a detached comm, or not ours */
  finished.push_back(it->second);
  if (!flush_set) {
    flush_set = true;
    simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock(), [] { flush(); });
  }
}

extern "C" void sgb_couriers(int mode)
{
  courier_force = mode;
}

extern "C" void sgb_couriers_auto(bool want)
{
  static bool env_read;
  if (!env_read) {
    env_read = true;
    if (const char* e = std::getenv("WEFT_COURIERS")) {
      if (!std::strcmp(e, "on") || !std::strcmp(e, "off"))
        courier_force = e[1] == 'n';
      else if (std::strcmp(e, "auto"))
        std::fprintf(stderr, "weft: warning: WEFT_COURIERS=%s is not on, "
                     "off or auto; ignored\n", e);
    }
  }
  couriers_on = courier_force >= 0 ? courier_force == 1
                                    : want && !COURIERS_SANITIZED;
}

extern "C" void sgb_calendar(bool on)
{
  cal_off = !on;
}

extern "C" long sgb_calendar_outside(void)
{
  return cal_outside;
}

extern "C" long sgb_courier_flows(void)
{
  return aflows_total;
}

extern "C" void sgb_init(sgb_done_fn fn, void* ctx)
{
  done_fn = fn;
  done_ctx = ctx;
  /* Until sgb_run enters SimGrid's loop, delays and flows are set from
   * outside it. */
  own_cal = !couriers_on && !cal_off;
  outside = own_cal;
  out_now = sg4::Engine::get_clock();
  if (registered)
    return; /* SimGrid's signal has no disconnect: connect once */
  registered = true;
  sg4::Activity::on_completion_cb([](sg4::Activity const& a) {
    auto it = live.find(&a);
    if (it == live.end())
      return; /* not ours */
    comm_tags.erase(a.get_data<void>());
    ended.push_back(std::move(it->second));
    live.erase(it);
    done_fn(done_ctx, a.get_data<void>());
    maybe_quit();
  });
  sg4::Engine::on_time_advance_cb([](double) { ended.clear(); });
  sg4::Link::on_communication_state_change_cb(on_flow_state);
}

extern "C" void sgb_comm(sg_host_t src, sg_host_t dst, double bytes, void* tag)
{
  if (couriers_on) {
    Courier* s = courier(src);
    Courier* d = courier(dst);
    auto* f = new AFlow{tag, (uint64_t)(bytes + 0.5), nullptr, nullptr, s, d, nullptr, false};
    aflows_pending++;
    aflows_total++;
    if (track)
      aflow_tags[tag] = f;
    s->out.push_back(f);
    ring(s);
    return;
  }
  if (outside)
    sync_clock();
  sg4::CommPtr c = sg4::Comm::sendto_init(src, dst);
  c->set_payload_size((uint64_t)(bytes + 0.5));
  c->set_data(tag);
  live[c.get()] = c;
  if (track)
    comm_tags[tag] = c.get();
  c->start();
  last_comm = c->get_impl();
}

/* SimGrid 3.32's CM02 (src/kernel/resource/models/network_cm02.cpp,
 * NetworkCm02Model::communicate and update_actions_state_lazy/full)
 * gives a comm the sharing penalty of its route's latency (with
 * network/weight-S 0, CM02's default), keeps its LMM variable at penalty
 * 0 (out of the sharing) while that latency is paid, then gives it that
 * penalty; LMM's max-min gives each variable a share in proportion to
 * 1 / penalty (src/kernel/lmm/maxmin.cpp).  A comm over a route of no
 * latency joins the sharing at once with penalty 1
 * (comm_action_set_variable), and Action::set_sharing_penalty changes a
 * variable's penalty in the LMM system; so a flow started when the
 * latency of the route it stands for is over, with penalty lat_s / mult,
 * takes the share of mult flows of that latency on every link of its
 * route.  The network action is not reachable from an s4u::Comm
 * (CommImpl is a private header), but CM02 has just created it
 * (Action::Action puts it at the back of its model's started set), and
 * its activity names the comm. */
extern "C" void sgb_comm_weighted(sg_host_t src, sg_host_t dst, double bytes,
                                  double mult, double lat_s, void* tag)
{
  if (couriers_on) {
    fprintf(stderr, "weft: a weighted flow cannot go by courier\n");
    abort();
  }
  /* Each flow's payload is whole bytes (sgb_comm): mult of them. */
  sgb_comm(src, dst, (double)(uint64_t)(bytes + 0.5) * mult, tag);
  using simgrid::kernel::resource::Action;
  using simgrid::kernel::resource::Model;
  /* NetworkModel (a private header) derives from Model first. */
  auto* model = reinterpret_cast<Model*>(
      sg4::Engine::get_instance()->get_netzone_root()->get_impl()->get_network_model().get());
  Action::StateSet* set = model->get_started_action_set();
  if (set->empty() || set->back().get_activity() != last_comm) {
    fprintf(stderr, "weft: a weighted flow's network action not found\n");
    abort();
  }
  set->back().set_sharing_penalty(lat_s / mult);
}

extern "C" void sgb_track(bool on)
{
  track = on;
  if (!on) {
    aflow_tags.clear();
    comm_tags.clear();
  }
}

extern "C" double sgb_comm_remaining(const void* tag)
{
  if (couriers_on) {
    auto it = aflow_tags.find(tag);
    if (it == aflow_tags.end())
      return 0;
    AFlow* f = it->second;
    return f->send ? f->send->get_remaining() : (double)f->bytes;
  }
  auto it = comm_tags.find(tag);
  return it == comm_tags.end() ? 0 : it->second->get_remaining();
}

extern "C" void sgb_delay(double seconds, void* tag)
{
  pending++;
  if (own_cal) {
    double date = clock_now() + seconds;
    cal.emplace(date, tag);
    if (!outside && !draining)
      arm(date);
    return;
  }
  simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock() + seconds, [tag] {
    pending--;
    done_fn(done_ctx, tag);
    maybe_quit();
  });
}

/* Nothing in flight or asked for: the replay is over (the engine only ever
 * acts on a completion), and the couriers may leave. */
static bool all_quiet()
{
  return live.empty() && pending == 0 && aflows_pending == 0;
}

static void maybe_quit()
{
  if (couriers.empty() || !all_quiet())
    return;
  for (auto& [h, c] : couriers) {
    c->quit = true;
    ring(c);
  }
}

static void run_own_calendar()
{
  /* Flows SimGrid's run returned without: they cannot end (the engine
   * reports them, sgb_live).  Not reached by any job known: then the
   * rest of the calendar is replayed inside SimGrid's run (proxy timers
   * while anything is live), and this count only keeps this loop from
   * calling run() again for them. */
  size_t stuck = 0;
  for (;;) {
    if (live.size() > stuck) { /* flows in flight: SimGrid's loop */
      outside = false;
      if (!cal.empty())
        arm(cal.top().first);
      sg4::Engine::get_instance()->run();
      out_now = sg4::Engine::get_clock();
      outside = true;
      stuck = live.size();
      continue;
    }
    if (cal.empty())
      break;
    double d = cal.top().first;
    while (out_now < d) /* as EngineImpl::solve moves the clock */
      out_now += d - out_now;
    drain(out_now);
  }
  sync_clock();
  outside = false;
  decltype(cal)::allocator_type::release(); /* the heap's node type */
}

extern "C" void sgb_run(void)
{
  if (own_cal)
    run_own_calendar();
  else
    sg4::Engine::get_instance()->run();
  own_cal = false;
  ended.clear();
  /* The couriers have left (all_quiet); their comms are over. */
  for (auto& [key, f] : aflows)
    delete f;
  aflows.clear();
  for (auto& [h, c] : couriers)
    delete c;
  couriers.clear();
}

extern "C" double sgb_now(void)
{
  return clock_now();
}

extern "C" long sgb_live(void)
{
  return (long)live.size() + pending + aflows_pending;
}

/* The engine, never destroyed.  simgrid_init keeps it in a function-local
 * static (SimGrid 3.32 src/s4u/s4u_Engine.cpp), whose destructor at exit
 * calls EngineImpl::shutdown, as does the atexit handler that
 * EngineImpl::initialize registers unless debug/clean-atexit is off
 * (src/kernel/EngineImpl.cpp).  Shutdown deletes the root zone, and with
 * it every host and link one by one (~NetZoneImpl), and the LMM system:
 * on a 131072-GPU platform it took longer than building it.  Here the
 * engine is made on the heap and left to the end of the process, which
 * gives the memory back at once; it stays reachable from
 * Engine::instance_ until then. */
extern "C" void sgb_boot(int* argc, char** argv)
{
  sg4::Engine::get_instance(argc, argv);
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
  /* Couriers: small stacks, and no guard page (two memory mappings per
   * actor exhausted vm.max_map_count at 32768 couriers). */
  sg4::Engine::set_config("contexts/stack-size:128");
  sg4::Engine::set_config("contexts/guard-size:0");
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

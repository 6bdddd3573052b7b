#include "sidecar/kube/event_recorder.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "sidecar/common/log.h"
#include "sidecar/kube/micro_time.h"

namespace baton::kube {
namespace {

// The Events' reportingController: what wrote them.
constexpr char kReportingController[] = "baton";

std::string EventJson(const EventRecorderOptions& options, const EventRecord& record,
                      absl::Time now) {
  boost::json::object event;
  event["apiVersion"] = "events.k8s.io/v1";
  event["kind"] = "Event";
  event["metadata"] = boost::json::object{{"generateName", options.lease_name + "-"},
                                          {"namespace", options.lease_namespace}};
  event["eventTime"] = FormatMicroTime(now);
  event["reportingController"] = kReportingController;
  event["reportingInstance"] = options.identity;
  event["type"] = record.type;
  event["reason"] = record.reason;
  event["action"] = record.action;
  event["note"] = record.note;
  event["regarding"] = boost::json::object{{"apiVersion", "coordination.k8s.io/v1"},
                                           {"kind", "Lease"},
                                           {"namespace", options.lease_namespace},
                                           {"name", options.lease_name}};
  return boost::json::serialize(event);
}

}  // namespace

EventRecorder::EventRecorder(std::unique_ptr<KubeClient> client, EventRecorderOptions options,
                             const Clock* clock)
    : client_(std::move(client)),
      options_(std::move(options)),
      clock_(clock),
      tokens_(options_.burst),
      last_refill_(clock->Monotonic()) {}

EventRecorder::~EventRecorder() { Stop(clock_->Monotonic()); }

void EventRecorder::Start() {
  worker_ = std::thread([this] { Run(); });
}

void EventRecorder::Record(EventRecord record) {
  absl::MutexLock lock(&mu_);
  if (stopping_ || counts_.forbidden || queue_.size() >= options_.queue_capacity) {
    ++counts_.dropped;
    return;
  }
  queue_.push_back(std::move(record));
}

void EventRecorder::Stop(MonoTime deadline) {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (worker_.joinable()) {
      clock_->AwaitUntil(&mu_, absl::Condition(this, &EventRecorder::DrainedLocked), deadline);
    }
    counts_.dropped += queue_.size();
    queue_.clear();
    stopped_ = true;
  }
  client_->Cancel();
  if (worker_.joinable()) worker_.join();
}

bool EventRecorder::HasWorkLocked() const { return stopped_ || !queue_.empty(); }

bool EventRecorder::DrainedLocked() const { return queue_.empty() && !sending_; }

EventRecorder::Counts EventRecorder::counts() const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

bool EventRecorder::TakeToken(MonoTime now) {
  const double refilled = absl::FDivDuration(now - last_refill_, options_.refill);
  tokens_ = std::min<double>(options_.burst, tokens_ + refilled);
  last_refill_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

void EventRecorder::Run() {
  for (;;) {
    EventRecord record;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &EventRecorder::HasWorkLocked));
      if (stopped_) return;
      record = std::move(queue_.front());
      queue_.pop_front();
      if (!TakeToken(clock_->Monotonic())) {
        ++counts_.dropped;
        continue;
      }
      sending_ = true;
    }
    const absl::Status sent = Send(record);
    absl::MutexLock lock(&mu_);
    sending_ = false;
    if (sent.ok()) {
      ++counts_.sent;
    } else if (absl::IsPermissionDenied(sent)) {
      counts_.forbidden = true;
      ++counts_.dropped;
      counts_.dropped += queue_.size();
      queue_.clear();
    } else {
      ++counts_.failed;
    }
  }
}

absl::Status EventRecorder::Send(const EventRecord& record) {
  const absl::StatusOr<boost::json::value> created = client_->Call(
      ApiVerb::kCreate,
      absl::StrCat("/apis/events.k8s.io/v1/namespaces/", options_.lease_namespace, "/events"),
      EventJson(options_, record, clock_->Wall()));
  absl::Status status = created.status();
  if (status.ok()) {
    if (failing_) {
      spdlog::info("event=events_recovered lease={}/{}", options_.lease_namespace,
                   options_.lease_name);
    }
    failing_ = false;
  } else if (absl::IsPermissionDenied(status)) {
    spdlog::warn(
        "event=events_forbidden lease={}/{} error={} next=\"record no Events; grant create on "
        "events.k8s.io events to have them\"",
        options_.lease_namespace, options_.lease_name, LogValue(std::string(status.message())));
  } else if (!failing_ && !absl::IsCancelled(status)) {
    failing_ = true;
    spdlog::warn("event=event_failed lease={}/{} action={} error={} next=\"drop it; try the next\"",
                 options_.lease_namespace, options_.lease_name, record.action,
                 LogValue(status.ToString()));
  }
  return status;
}

}  // namespace baton::kube

#include "sidecar/kube/micro_time.h"

#include <cstdint>
#include <optional>

#include "absl/strings/str_cat.h"

namespace baton::kube {
namespace {

// Reads exactly `n` decimal digits at `pos`, or nullopt.
std::optional<int64_t> Digits(absl::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int64_t v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

bool CharAt(absl::string_view s, size_t pos, char c) { return pos < s.size() && s[pos] == c; }

}  // namespace

absl::Time MicroTimeFirst() {
  return absl::FromCivil(absl::CivilSecond(0, 1, 1, 0, 0, 0), absl::UTCTimeZone());
}

absl::Time MicroTimeLast() {
  return absl::FromCivil(absl::CivilSecond(10000, 1, 1, 0, 0, 0), absl::UTCTimeZone()) -
         absl::Microseconds(1);
}

std::string FormatMicroTime(absl::Time t) {
  // %E4Y: four digits even before year 1000 (plain %Y writes "999").
  return absl::FormatTime("%E4Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

absl::StatusOr<absl::Time> ParseMicroTime(absl::string_view text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid RFC 3339 time \"", text.substr(0, 64), "\": ", why));
  };
  auto year = Digits(text, 0, 4);
  auto month = Digits(text, 5, 2);
  auto day = Digits(text, 8, 2);
  auto hour = Digits(text, 11, 2);
  auto minute = Digits(text, 14, 2);
  auto second = Digits(text, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second || !CharAt(text, 4, '-') ||
      !CharAt(text, 7, '-') || !CharAt(text, 10, 'T') || !CharAt(text, 13, ':') ||
      !CharAt(text, 16, ':')) {
    return bad("want YYYY-MM-DDTHH:MM:SS");
  }
  const absl::CivilSecond civil(*year, *month, *day, *hour, *minute, *second);
  // CivilSecond normalizes out-of-range fields (Feb 30 → Mar 2); refuse them.
  if (civil.year() != *year || civil.month() != *month || civil.day() != *day ||
      civil.hour() != *hour || civil.minute() != *minute || civil.second() != *second) {
    return bad("field out of range");
  }

  size_t pos = 19;
  absl::Duration fraction;
  if (CharAt(text, pos, '.')) {
    ++pos;
    size_t digits = 0;
    int64_t nanos = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (++digits > 9) return bad("more than 9 fractional digits");
      nanos = nanos * 10 + (text[pos++] - '0');
    }
    if (digits == 0) return bad("empty fraction");
    for (size_t i = digits; i < 9; ++i) nanos *= 10;
    fraction = absl::Nanoseconds(nanos);
  }

  absl::Duration offset;
  if (CharAt(text, pos, 'Z')) {
    ++pos;
  } else if (CharAt(text, pos, '+') || CharAt(text, pos, '-')) {
    const bool east = text[pos] == '+';
    auto off_hour = Digits(text, pos + 1, 2);
    auto off_minute = Digits(text, pos + 4, 2);
    if (!off_hour || !off_minute || !CharAt(text, pos + 3, ':') || *off_hour > 23 ||
        *off_minute > 59) {
      return bad("bad zone offset, want ±HH:MM");
    }
    offset = absl::Hours(*off_hour) + absl::Minutes(*off_minute);
    if (!east) offset = -offset;
    pos += 6;
  } else {
    return bad("missing zone (Z or ±HH:MM)");
  }
  if (pos != text.size()) return bad("trailing characters");
  const absl::Time t = absl::FromCivil(civil, absl::UTCTimeZone()) + fraction - offset;
  // An offset can carry a time across year 0000 or 9999 in UTC, where the
  // API server can neither write it (Go's MarshalJSON refuses) nor baton.
  if (t < MicroTimeFirst() || t >= MicroTimeLast() + absl::Microseconds(1)) {
    return bad("outside years 0000-9999 in UTC");
  }
  return t;
}

}  // namespace baton::kube

#include "lib/transport/registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/core/errors.h"

namespace railbench {

namespace {

// Function-local: the transports' static initializers may run before this file's.
std::vector<std::unique_ptr<TransportEntry>>& registry() {
  static std::vector<std::unique_ptr<TransportEntry>> entries;
  return entries;
}

std::string flag_of(const TransportEntry& e, const TransportOption& o) {
  return e.name + "-" + o.name;
}

// "-t ofi:tcp, -t ofi:shm": the first two forms that name a provider, else the first two.
std::string examples(const std::vector<const TransportEntry*>& built) {
  std::vector<std::string> with_provider, any;
  for (const auto* e : built) {
    for (const auto& f : e->forms) {
      any.push_back("-t " + f);
      if (f.find(':') != std::string::npos) with_provider.push_back("-t " + f);
    }
  }
  auto& pick = with_provider.empty() ? any : with_provider;
  pick.resize(std::min<size_t>(pick.size(), 2));
  return fmt::format("{}", fmt::join(pick, ", "));
}

// Another transport's options given away from their defaults: refused with the option,
// its owner and the fix, rather than silently ignored.
void refuse_foreign_options(const TransportEntry& chosen, const TransportSpec& spec) {
  for (const auto* owner : all_transports()) {
    if (owner == &chosen) continue;
    std::vector<std::string> given;
    for (const auto& o : owner->options) {
      const auto it = spec.options.find(flag_of(*owner, o));
      if (it == spec.options.end() || it->second == o.default_value) continue;
      given.push_back(fmt::format("--{}{}", flag_of(*owner, o), o.alias.empty() ? "" : fmt::format(" ({})", o.alias)));
    }
    if (given.empty()) continue;
    const bool one = given.size() == 1;
    const std::string note = chosen.foreign_options_note.empty() ? fmt::format("-t {} has no such option", chosen.name)
                                                                 : chosen.foreign_options_note;
    throw UsageError(fmt::format("{} appl{} to -t {}; {} (drop {} for -t {})", fmt::join(given, " and "),
                                 one ? "ies" : "y", owner->name, note, one ? "it" : "them", chosen.name));
  }
}

}  // namespace

int TransportSpec::option(const std::string& option_name) const {
  const std::string flag = name + "-" + option_name;
  const auto it = options.find(flag);
  if (it != options.end()) return it->second;
  for (const auto* e : transports()) {
    if (e->name != name) continue;
    for (const auto& o : e->options)
      if (o.name == option_name) return o.default_value;
  }
  throw UsageError(fmt::format(
      "transport {} asks for --{}, an option it does not register: add it to the options of its TransportEntry", name,
      flag));
}

bool register_transport(TransportEntry entry) {
  for (const auto& e : registry()) {
    if (e->name == entry.name) {
      std::fprintf(stderr, "railbench: transport '%s' registered twice: link its registration once\n",
                   entry.name.c_str());
      std::abort();
    }
  }
  registry().push_back(std::make_unique<TransportEntry>(std::move(entry)));
  return true;
}

std::vector<const TransportEntry*> all_transports() {
  std::vector<const TransportEntry*> out;
  for (const auto& e : registry()) out.push_back(e.get());
  std::stable_sort(out.begin(), out.end(), [](const auto* a, const auto* b) { return a->order < b->order; });
  return out;
}

std::vector<const TransportEntry*> transports() {
  auto out = all_transports();
  std::erase_if(out, [](const auto* e) { return !e->built(); });
  return out;
}

std::vector<std::string> built_transports() {
  std::vector<std::string> out;
  for (const auto* e : transports()) out.push_back(e->name);
  return out;
}

std::string transport_help() {
  std::vector<std::string> forms;
  for (const auto* e : transports()) forms.insert(forms.end(), e->forms.begin(), e->forms.end());
  return fmt::format("Transport[:provider]: {}", fmt::join(forms, ", "));
}

TransportTraits transport_traits(const std::string& form, const std::vector<std::string>& rails) {
  const size_t colon = form.find(':');
  const std::string name = form.substr(0, colon);
  const std::string provider = colon == std::string::npos ? "" : form.substr(colon + 1);
  std::vector<std::string> known;
  for (const auto* e : all_transports()) {
    if (e->name == name) return e->traits ? e->traits(provider, rails) : TransportTraits{};
    known.push_back(e->name);
    for (const auto& f : e->forms)
      if (f != e->name) known.push_back(f);
  }
  throw UsageError(fmt::format("'{}' is not a transport: use {}", form, fmt::join(known, ", ")));
}

const TransportEntry& find_transport(const std::string& name, const std::string& as_typed) {
  const auto built = transports();
  for (const auto* e : built)
    if (e->name == name) return *e;
  std::string missing;
  for (const auto* e : all_transports())
    if (e->name == name && !e->missing_note.empty()) missing = fmt::format("; -t {} {}", name, e->missing_note);
  throw UsageError(fmt::format("unknown transport '{}': this build has {} (e.g. {}){}", as_typed,
                               fmt::join(built_transports(), ", "), examples(built), missing));
}

std::unique_ptr<Transport> make_transport(const TransportSpec& spec, const TransportJob& job) {
  const TransportEntry& entry = find_transport(spec.name, spec.name);
  refuse_foreign_options(entry, spec);
  return entry.make(spec, job);
}

nlohmann::json transport_details(const std::string& name) {
  for (const auto* e : transports())
    if (e->name == name && e->details) return e->details();
  return nlohmann::json::object();
}

}  // namespace railbench

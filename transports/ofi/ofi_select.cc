#include "transports/ofi/ofi_select.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/core/errors.h"

namespace railbench::ofi {

std::string fi_error_text(long long ret) {
  return fmt::format("{}", FiErrorText{ret});
}

std::string mr_mode_string(uint64_t mr_mode) {
  static constexpr std::pair<uint64_t, const char*> kBits[] = {
      {FI_MR_LOCAL, "FI_MR_LOCAL"},         {FI_MR_RAW, "FI_MR_RAW"},
      {FI_MR_VIRT_ADDR, "FI_MR_VIRT_ADDR"}, {FI_MR_ALLOCATED, "FI_MR_ALLOCATED"},
      {FI_MR_PROV_KEY, "FI_MR_PROV_KEY"},   {FI_MR_MMU_NOTIFY, "FI_MR_MMU_NOTIFY"},
      {FI_MR_RMA_EVENT, "FI_MR_RMA_EVENT"}, {FI_MR_ENDPOINT, "FI_MR_ENDPOINT"},
      {FI_MR_HMEM, "FI_MR_HMEM"},           {FI_MR_COLLECTIVE, "FI_MR_COLLECTIVE"},
  };
  std::string out;
  for (auto [bit, name] : kBits) {
    if ((mr_mode & bit) == 0) continue;
    if (!out.empty()) out += '|';
    out += name;
  }
  return out.empty() ? "none" : out;
}

std::string core_provider(const char* prov_name) {
  std::string_view p = prov_name != nullptr ? prov_name : "";
  return std::string(p.substr(0, p.find(';')));
}

namespace {

// Requirements from strictest to weakest; the first level that yields the provider wins.
enum class Level { rma_ordered, rma, msg_only };

constexpr uint64_t kRmaCaps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

InfoPtr make_hints(Level level, bool hmem) {
  InfoPtr h(fi_allocinfo());
  if (!h) throw TransportError("libfabric fi_allocinfo failed: out of memory");
  h->ep_attr->type = FI_EP_RDM;
  h->caps = FI_MSG | FI_TAGGED | (level == Level::msg_only ? 0 : kRmaCaps) | (hmem ? FI_HMEM : 0);
  // Every op context starts with an fi_context2, so both context modes are acceptable.
  h->mode = FI_CONTEXT | FI_CONTEXT2;
  // Everything we can cope with; FI_MR_HMEM only when registering GPU memory.
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  if (hmem) h->domain_attr->mr_mode |= FI_MR_HMEM;
  // One transport is driven by one thread, so the provider may skip its locks.
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  // Lets a full queue answer -FI_EAGAIN instead of overrunning a peer.
  h->domain_attr->resource_mgmt = FI_RM_ENABLED;
  h->domain_attr->av_type = FI_AV_TABLE;
  // SAS is what makes "sender's rank as tag" a FIFO per (peer, rail). Ordering is only
  // honoured when both sides agree, hence tx and rx.
  uint64_t order = FI_ORDER_SAS;
  if (level == Level::rma_ordered) order |= FI_ORDER_WAW | FI_ORDER_SAW;
  h->tx_attr->msg_order = order;
  h->rx_attr->msg_order = order;
  return h;
}

// Null when nothing matches.
InfoPtr query(const fi_info* hints) {
  fi_info* out = nullptr;
  int ret = fi_getinfo(kApiVersion, nullptr, nullptr, 0, const_cast<fi_info*>(hints), &out);
  if (ret == -FI_ENODATA) return nullptr;
  if (ret != 0) {
    throw TransportError(
        fmt::format("libfabric fi_getinfo failed: {}; check FI_PROVIDER and FI_* environment "
                    "variables, or run fi_info -t FI_EP_RDM",
                    fi_error_text(ret)));
  }
  return InfoPtr(out);
}

bool provider_matches(const fi_info* info, std::string_view wanted) {
  const char* prov = info->fabric_attr->prov_name;
  return prov != nullptr && (wanted == prov || wanted == core_provider(prov));
}

std::vector<std::string> core_providers(const fi_info* list) {
  std::vector<std::string> names;
  for (auto* i = list; i != nullptr; i = i->next) {
    auto name = core_provider(i->fabric_attr->prov_name);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

std::string join(const std::vector<std::string>& v) {
  return v.empty() ? std::string("none") : fmt::format("{}", fmt::join(v, ", "));
}

bool is_loopback(const fi_info* info) {
  std::string_view domain = info->domain_attr->name != nullptr ? info->domain_attr->name : "";
  std::string_view fabric = info->fabric_attr->name != nullptr ? info->fabric_attr->name : "";
  return domain == "lo" || fabric.starts_with("127.") || fabric == "::1/128";
}

// One entry per distinct domain name, in the provider's order. Within a domain an IPv4
// entry wins: link-local IPv6 fabrics (fe80::/64) are not routable between hosts.
std::vector<const fi_info*> distinct_domains(const fi_info* list, std::string_view provider) {
  std::vector<const fi_info*> out;
  for (auto* i = list; i != nullptr; i = i->next) {
    if (!provider_matches(i, provider) || i->domain_attr->name == nullptr) continue;
    auto same = std::find_if(out.begin(), out.end(), [&](const fi_info* o) {
      return std::string_view(o->domain_attr->name) == i->domain_attr->name;
    });
    if (same == out.end()) {
      out.push_back(i);
    } else if ((*same)->addr_format != FI_SOCKADDR_IN && i->addr_format == FI_SOCKADDR_IN) {
      *same = i;
    }
  }
  return out;
}

std::string domain_names(const std::vector<const fi_info*>& domains) {
  std::vector<std::string> names;
  for (auto* d : domains) names.emplace_back(d->domain_attr->name);
  return join(names);
}

// Auto selection: the fastest fabric this host has.
std::string pick_provider(const OfiOptions& options, const std::vector<std::string>& available) {
  std::vector<std::string> preference = {"efa", "verbs"};
  if (options.all_ranks_on_one_host) preference.emplace_back("shm");
  preference.emplace_back("tcp");
  for (const auto& p : preference) {
    if (std::find(available.begin(), available.end(), p) != available.end()) return p;
  }
  return available.front();
}

std::vector<const fi_info*> choose_domains(const OfiOptions& options, const std::string& provider,
                                           const std::vector<const fi_info*>& domains) {
  std::vector<const fi_info*> chosen;
  if (!options.domains.empty()) {
    for (const auto& name : options.domains) {
      auto it =
          std::find_if(domains.begin(), domains.end(), [&](const fi_info* d) { return name == d->domain_attr->name; });
      if (it == domains.end()) {
        throw UsageError(
            fmt::format("libfabric provider '{}' has no domain '{}' on this host; its domains here: {} "
                        "(run 'railbench info' or fi_info -p {} -t FI_EP_RDM)",
                        provider, name, domain_names(domains), core_provider(provider.c_str())));
      }
      chosen.push_back(*it);
    }
  } else {
    // Loopback goes last, and only when every rank is on this host (or nothing else
    // exists): a "lo" rail cannot reach another host.
    std::vector<const fi_info*> loopback;
    for (auto* d : domains) (is_loopback(d) ? loopback : chosen).push_back(d);
    if (options.all_ranks_on_one_host || chosen.empty()) chosen.insert(chosen.end(), loopback.begin(), loopback.end());
    if (chosen.size() > static_cast<size_t>(options.num_rails)) chosen.resize(options.num_rails);
  }
  // Fewer distinct domains than rails: repeat them. Every rail still opens its own
  // fabric, domain and endpoint, which lets a single-NIC host exercise multi-rail code.
  size_t distinct = chosen.size();
  for (size_t i = distinct; i < static_cast<size_t>(options.num_rails); ++i) chosen.push_back(chosen[i % distinct]);
  return chosen;
}

}  // namespace

Selection select_rails(const OfiOptions& options) {
  if (options.num_rails < 1) {
    throw UsageError(fmt::format("number of rails must be at least 1, got {}", options.num_rails));
  }
  auto minimal_hints = make_hints(Level::msg_only, false);
  auto minimal = query(minimal_hints.get());
  auto available = core_providers(minimal.get());
  if (available.empty()) {
    throw UsageError(
        "no libfabric provider offers tagged RDM endpoints on this host (run fi_info -t FI_EP_RDM); check "
        "FI_PROVIDER and that the libfabric providers are installed");
  }

  std::string wanted = options.provider.empty() ? pick_provider(options, available) : options.provider;
  bool known = false;
  for (auto* i = minimal.get(); i != nullptr && !known; i = i->next) known = provider_matches(i, wanted);
  if (!known) {
    throw UsageError(
        fmt::format("libfabric provider '{}' is not available on this host; providers offering RDM "
                    "endpoints here: {} (run 'railbench info' or fi_info -l)",
                    wanted, join(available)));
  }

  if (options.hmem) {
    // GPU memory: only domains that grant FI_HMEM (e.g. efa, verbs with CUDA) qualify.
    auto hmem_hints = make_hints(Level::msg_only, true);
    auto hmem_list = query(hmem_hints.get());
    if (distinct_domains(hmem_list.get(), wanted).empty()) {
      const auto with = core_providers(hmem_list.get());
      throw UnsupportedError(fmt::format(
          "--mem cuda over -t ofi: libfabric provider '{}' offers no FI_HMEM (GPU memory) here; providers that do: "
          "{}; use --mem cuda-host, or a libfabric built with CUDA (efa, verbs)",
          wanted, with.empty() ? std::string("none") : join(with)));
    }
    minimal = std::move(hmem_list);
  }

  for (Level level : {Level::rma_ordered, Level::rma, Level::msg_only}) {
    auto hints = make_hints(level, options.hmem);
    auto list = level == Level::msg_only ? std::move(minimal) : query(hints.get());
    auto domains = distinct_domains(list.get(), wanted);
    if (domains.empty()) continue;

    Selection s;
    s.provider = domains.front()->fabric_attr->prov_name;
    s.rma = level != Level::msg_only;
    s.ordering_requested = level == Level::rma_ordered;
    s.hmem = options.hmem;
    s.gpu = options.gpu;
    for (const fi_info* d : choose_domains(options, s.provider, domains)) {
      InfoPtr copy(fi_dupinfo(d));
      if (!copy) throw TransportError("libfabric fi_dupinfo failed: out of memory");
      s.rails.push_back(std::move(copy));
    }
    return s;
  }
  // Unreachable: the provider was found at the weakest level above.
  throw UsageError(fmt::format("libfabric provider '{}' offers no usable RDM domain", wanted));
}

std::vector<ProviderEntry> list_providers() {
  auto hints = make_hints(Level::msg_only, false);
  // No capability filter, so each provider reports everything it can do (RMA included).
  hints->caps = 0;
  hints->tx_attr->msg_order = 0;
  hints->rx_attr->msg_order = 0;
  auto list = query(hints.get());

  std::vector<ProviderEntry> out;
  for (auto* i = list.get(); i != nullptr; i = i->next) {
    if ((i->caps & FI_MSG) == 0) continue;
    ProviderEntry e;
    e.provider = i->fabric_attr->prov_name != nullptr ? i->fabric_attr->prov_name : "";
    e.domain = i->domain_attr->name != nullptr ? i->domain_attr->name : "";
    e.fabric = i->fabric_attr->name != nullptr ? i->fabric_attr->name : "";
    e.rma = (i->caps & FI_RMA) != 0;
    e.tagged = (i->caps & FI_TAGGED) != 0;
    e.mr_mode = mr_mode_string(i->domain_attr->mr_mode);
    // Utility providers answer once per variant of the core entry; one line is enough.
    bool duplicate = std::any_of(out.begin(), out.end(), [&](const ProviderEntry& o) {
      return o.provider == e.provider && o.domain == e.domain && o.fabric == e.fabric;
    });
    if (!duplicate) out.push_back(std::move(e));
  }
  return out;
}

std::string libfabric_version() {
  uint32_t v = fi_version();
  // fi_version() has no revision; the compile-time one applies when major.minor agree.
  if (v == FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)) {
    return fmt::format("{}.{}.{}", FI_MAJOR_VERSION, FI_MINOR_VERSION, FI_REVISION_VERSION);
  }
  return fmt::format("{}.{}", FI_MAJOR(v), FI_MINOR(v));
}

}  // namespace railbench::ofi

// What UCX offers on this host, read through uct (as ucx_info -d does), for `info`
// and for checking -t ucx:TLS and --rails before anything is opened.
#include <memory>

#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include "transports/ucx/ucx_transport.h"

namespace railbench::ucx {

std::string ucx_version() {
  return ucp_get_version_string();
}

std::vector<TlResource> list_resources() {
  std::vector<TlResource> out;
  uct_component_h* comps = nullptr;
  unsigned n_comps = 0;
  if (uct_query_components(&comps, &n_comps) != UCS_OK) return out;
  std::unique_ptr<uct_component_h, void (*)(uct_component_h*)> comps_guard(comps, uct_release_component_list);
  for (unsigned c = 0; c < n_comps; ++c) {
    std::vector<uct_md_resource_desc_t> mds;
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(comps[c], &attr) != UCS_OK) continue;
    mds.resize(attr.md_resource_count);
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    if (uct_component_query(comps[c], &attr) != UCS_OK) continue;
    for (const auto& md_desc : mds) {
      uct_md_config_t* md_config = nullptr;
      if (uct_md_config_read(comps[c], nullptr, nullptr, &md_config) != UCS_OK) continue;
      std::unique_ptr<uct_md_config_t, void (*)(void*)> cfg_guard(md_config, uct_config_release);
      uct_md_h md = nullptr;
      if (uct_md_open(comps[c], md_desc.md_name, md_config, &md) != UCS_OK) continue;
      std::unique_ptr<uct_md, void (*)(uct_md_h)> md_guard(md, uct_md_close);
      uct_tl_resource_desc_t* tls = nullptr;
      unsigned n_tls = 0;
      if (uct_md_query_tl_resources(md, &tls, &n_tls) != UCS_OK) continue;
      for (unsigned t = 0; t < n_tls; ++t) out.push_back(TlResource{tls[t].tl_name, tls[t].dev_name, md_desc.md_name});
      uct_release_tl_resource_list(tls);
    }
  }
  return out;
}

}  // namespace railbench::ucx

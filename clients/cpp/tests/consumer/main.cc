// Asks the sidecar at $BATON_GRPC_ADDR once; exits 0 if it answered.
#include <cstdio>

#include "baton/client/client.h"
#include "baton/client/fence.h"

int main() {
  auto client = baton::client::Client::Create();
  if (!client.ok()) return 2;
  absl::StatusOr<baton::client::Leadership> l = (*client)->GetLeadership();
  if (!l.ok()) {
    std::printf("%s\n", std::string(l.status().message()).c_str());
    return 1;
  }
  baton::client::Fence fence;
  std::printf("identity=%s leader=%d token=%d admitted=%d\n", l->identity.c_str(), l->is_leader,
              l->fencing_token, fence.Admit(l->fencing_token).ok());
  return 0;
}

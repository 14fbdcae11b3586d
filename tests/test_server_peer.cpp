// The server's look at its own descriptors (server/peer.h): sockets are told from the other
// descriptors by /proc's link alone, and a connected socket's key is its address pair.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "server/peer.h"

namespace nvfp4::server {
namespace {

std::set<int> proc_sockets() {
  std::set<int> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = proc_fd_socket(e.path().string());
    if (fd >= 0) out.insert(fd);
  }
  return out;
}

TEST(ServerPeer, ProcFdSocketFindsSocketsAndOnlySockets) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const int file = ::open("/proc/self/status", O_RDONLY);
  ASSERT_GE(file, 0);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const std::set<int> s = proc_sockets();
  EXPECT_TRUE(s.count(sv[0]) && s.count(sv[1]));
  EXPECT_FALSE(s.count(file));
  EXPECT_FALSE(s.count(pipefd[0]) || s.count(pipefd[1]));
  // Names that are not descriptors, and a descriptor closed since its entry was listed.
  EXPECT_EQ(proc_fd_socket("/proc/self/fd/x"), -1);
  EXPECT_EQ(proc_fd_socket("/proc/self/fd/-1"), -1);
  const std::string gone = std::to_string(sv[1]);
  ::close(sv[1]);
  EXPECT_EQ(proc_fd_socket("/proc/self/fd/" + gone), -1);
  ::close(sv[0]);
  ::close(file);
  ::close(pipefd[0]);
  ::close(pipefd[1]);
}

TEST(ServerPeer, SocketKeyNamesBothEndsOfATcpConnection) {
  const int l = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(l, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(l, 1), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  const int c = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const int s = ::accept(l, nullptr, nullptr);
  ASSERT_GE(s, 0);
  sockaddr_in ca{};
  len = sizeof ca;
  ASSERT_EQ(::getsockname(c, reinterpret_cast<sockaddr*>(&ca), &len), 0);
  EXPECT_TRUE(proc_sockets().count(s));
  // The server's end: remote = the client's address and port, local = the server's address.
  EXPECT_EQ(socket_key(s, port), "127.0.0.1|" + std::to_string(ntohs(ca.sin_port)) + "|127.0.0.1");
  EXPECT_EQ(socket_key(s, port + 1), "");  // another port's connection
  EXPECT_EQ(socket_key(l, port), "");      // the listening socket has no peer
  ::close(s);
  ::close(c);
  ::close(l);
}

}  // namespace
}  // namespace nvfp4::server

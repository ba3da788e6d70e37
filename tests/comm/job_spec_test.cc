// JobSpec resolution (comm/bootstrap/job_spec.h): where ranks come from for every launcher,
// which backend each gets, and every inconsistency refused naming the argument or variable.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <shardflow/comm/bootstrap/job_spec.h>
#include <shardflow/core/error.h>

namespace sf::comm {
namespace {

EnvReader env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

void expect_refused(const std::vector<std::string>& args, std::map<std::string, std::string> vars,
                    const std::string& needle) {
  try {
    resolve_job(args, env_of(std::move(vars)));
    ADD_FAILURE() << "not refused: " << needle;
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(JobSpec, NothingSetIsOneInprocRank) {
  const JobSpec s = resolve_job({}, env_of({}));
  EXPECT_EQ(s.source, JobSpec::Source::kSingle);
  EXPECT_EQ(s.backend, "inproc");
  EXPECT_EQ(s.size, 1);
  EXPECT_EQ(s.rank, 0);
}

TEST(JobSpec, DevicesAreVirtualRanksOfThisProcess) {
  const JobSpec s = resolve_job({"--devices", "8"}, env_of({}));
  EXPECT_EQ(s.source, JobSpec::Source::kDevices);
  EXPECT_EQ(s.backend, "inproc");
  EXPECT_EQ(s.size, 8);
  EXPECT_EQ(s.local_ranks, 8);
  EXPECT_EQ(resolve_job({"--devices=3"}, env_of({})).size, 3);
}

TEST(JobSpec, SfrunVariablesGiveAZmqRank) {
  const JobSpec s = resolve_job({}, env_of({{"SF_RANK", "2"}, {"SF_WORLD_SIZE", "4"}, {"SF_LOCAL_RANK", "0"},
                                            {"SF_RENDEZVOUS", "tcp://10.0.0.1:29500"}, {"SF_JOB_SECRET", "s3"}}));
  EXPECT_EQ(s.source, JobSpec::Source::kLauncher);
  EXPECT_EQ(s.backend, "zmq");
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.size, 4);
  EXPECT_EQ(s.local_ranks, 1);
  EXPECT_EQ(s.rendezvous, "tcp://10.0.0.1:29500");
  EXPECT_EQ(s.secret, "s3");
}

TEST(JobSpec, MpirunVariablesGiveAnMpiRank) {
  const JobSpec s = resolve_job({}, env_of({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "3"},
                                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  EXPECT_EQ(s.source, JobSpec::Source::kMpirun);
  EXPECT_EQ(s.backend, "mpi");
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.size, 3);
  EXPECT_EQ(s.local_rank, 1);
}

TEST(JobSpec, SlurmVariablesWithMasterAddressGiveAZmqRank) {
  const JobSpec s = resolve_job({}, env_of({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                                            {"MASTER_ADDR", "node01"}, {"MASTER_PORT", "29500"},
                                            {"SF_JOB_SECRET", "x"}}));
  EXPECT_EQ(s.source, JobSpec::Source::kSlurm);
  EXPECT_EQ(s.backend, "zmq");
  EXPECT_EQ(s.rank, 5);
  EXPECT_EQ(s.size, 8);
  EXPECT_EQ(s.local_rank, 1);
  EXPECT_EQ(s.rendezvous, "tcp://node01:29500");
}

TEST(JobSpec, BackendCanBeChosenWhereTheLaunchAllowsIt) {
  EXPECT_EQ(resolve_job({"--backend", "zmq"}, env_of({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                                       {"SF_RENDEZVOUS", "ipc:///tmp/r"}, {"SF_JOB_SECRET", "k"}}))
                .backend,
            "zmq");
  EXPECT_EQ(resolve_job({}, env_of({{"SF_BACKEND", "mpi"}})).backend, "mpi");
  EXPECT_EQ(resolve_job({"--devices", "3", "--backend", "zmq"}, env_of({})).backend, "zmq");  // real sockets
}

TEST(JobSpec, TimeoutAndDebugFlags) {
  const JobSpec s = resolve_job({"--comm-timeout", "2.5", "--comm-debug"}, env_of({}));
  ASSERT_TRUE(s.timeout);
  EXPECT_EQ(s.timeout->count(), 2500);
  EXPECT_TRUE(s.debug);
}

TEST(JobSpec, InconsistenciesAreRefusedNamingTheCulprit) {
  expect_refused({"--devices", "0"}, {}, "--devices='0' is not an integer >= 1");
  expect_refused({"--devices", "two"}, {}, "--devices='two'");
  expect_refused({"--devices", "4"}, {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}},
                 "started by mpirun as one rank of a job");
  expect_refused({}, {{"SF_RANK", "4"}, {"SF_WORLD_SIZE", "4"}, {"SF_RENDEZVOUS", "x"}, {"SF_JOB_SECRET", "k"}},
                 "SF_RANK=4 is outside a world of SF_WORLD_SIZE=4 ranks");
  expect_refused({}, {{"SF_RANK", "0"}}, "SF_WORLD_SIZE is not");
  expect_refused({}, {{"SF_RANK", "0"}, {"SF_WORLD_SIZE", "2"}, {"SF_JOB_SECRET", "k"}}, "needs a rendezvous");
  expect_refused({}, {{"SF_RANK", "0"}, {"SF_WORLD_SIZE", "2"}, {"SF_RENDEZVOUS", "tcp://h:1"}}, "SF_JOB_SECRET");
  expect_refused({}, {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"MASTER_ADDR", "h"}}, "MASTER_PORT is not");
  expect_refused({"--backend", "nccl"}, {}, "backend 'nccl' is not one of inproc, zmq, mpi");
  expect_refused({"--backend", "inproc"}, {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}},
                 "backend inproc joins only the ranks of one process, but Slurm started this process as rank 1 of 2");
  expect_refused({"--devices", "2", "--backend", "mpi"}, {}, "backend mpi needs a job started by mpirun");
  expect_refused({"--comm-timeout", "0"}, {}, "--comm-timeout 0");
  expect_refused({"--comm-timeout", "1e300"}, {}, "--comm-timeout 1e300");  // overflowed milliseconds
}

TEST(JobSpec, ConsumeTakesOnlyTheCommArguments) {
  std::vector<std::string> storage = {"prog", "--epochs", "3", "--devices", "8", "--comm-debug", "--backend=inproc",
                                      "data.idx"};
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(storage.size());
  const auto taken = consume_comm_args(argc, argv.data());
  EXPECT_EQ(taken, (std::vector<std::string>{"--devices", "8", "--comm-debug", "--backend=inproc"}));
  ASSERT_EQ(argc, 4);
  EXPECT_STREQ(argv[1], "--epochs");
  EXPECT_STREQ(argv[2], "3");
  EXPECT_STREQ(argv[3], "data.idx");
  EXPECT_EQ(argv[4], nullptr);
}

}  // namespace
}  // namespace sf::comm

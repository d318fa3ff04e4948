// The C ABI between ktune and libktune_optuna.so, the module that embeds CPython and drives an
// Optuna study. ktune dlopens the module on first use of an Optuna strategy, so the `ktune`
// binary itself never links libpython. The module exports one entry, ktune_optuna_api(), which
// returns a versioned table; fields are only ever appended (check struct_size before using one
// added after version 1). Every function catches everything: failures come back as a status
// code and a message, never as a C++ exception across the boundary.
//
// The module knows nothing of ktune's search spaces: a study sees one integer parameter per
// ktune parameter, the index into its value list (0..count-1), ordered unless categorical.
// Validity, projection and duplicates are the caller's business (optuna_strategy.cpp).
#ifndef KTUNE_OPTUNA_MODULE_H
#define KTUNE_OPTUNA_MODULE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KTUNE_OPTUNA_ABI_VERSION 1
#define KTUNE_OPTUNA_ENTRY "ktune_optuna_api"

// Status codes of the functions below.
enum {
  KTUNE_OPTUNA_OK = 0,
  KTUNE_OPTUNA_E_USAGE = 1,        // bad sampler option, bad storage URL: the user's to fix
  KTUNE_OPTUNA_E_UNAVAILABLE = 2,  // Python would not start, or `import optuna` failed
  KTUNE_OPTUNA_E_INTERNAL = 3,     // anything else Python or Optuna raised
};

// Optuna's TrialState values (optuna.trial.TrialState), as told and as read back.
enum {
  KTUNE_OPTUNA_RUNNING = 0,
  KTUNE_OPTUNA_COMPLETE = 1,
  KTUNE_OPTUNA_PRUNED = 2,
  KTUNE_OPTUNA_FAIL = 3,
  KTUNE_OPTUNA_WAITING = 4,
  // Not Optuna's: read back for another worker's RUNNING trial whose process is gone (same host)
  // or that has run for longer than any evaluation can (ktune_optuna.STALE_SECONDS).
  KTUNE_OPTUNA_ABANDONED = 5,
};

typedef struct KtuneOptunaStudy KtuneOptunaStudy;  // opaque, owned by the caller

typedef struct KtuneOptunaParam {
  const char* name;
  uint32_t count;       // the study samples 0..count-1
  int32_t categorical;  // nonzero: unordered (CategoricalDistribution), else IntDistribution
} KtuneOptunaParam;

typedef struct KtuneOptunaOption {
  const char* key;
  const char* value;
} KtuneOptunaOption;

typedef struct KtuneOptunaStudySpec {
  const char* sampler;  // tpe, cmaes, nsgaii, qmc, random, grid
  uint64_t seed;
  const KtuneOptunaParam* params;
  uint32_t param_count;
  const KtuneOptunaOption* options;  // the sampler's own options, as text
  uint32_t option_count;
  const char* storage;     // "" in memory; "journal:PATH"; or an RDB URL (sqlite:///PATH ...)
  const char* study_name;  // loaded if it exists in the storage, created otherwise
} KtuneOptunaStudySpec;

// One trial as read back from the study.
typedef struct KtuneOptunaTrial {
  int64_t number;
  int32_t state;           // KTUNE_OPTUNA_RUNNING ...
  int32_t has_params;      // zero while a trial holds fewer params than the study's
  double value;            // NaN unless COMPLETE
  const uint32_t* params;  // param_count indices when has_params
  const char* config_key;  // user attr "ktune_config", or null
  const char* status;      // user attr "ktune_status", or null
} KtuneOptunaTrial;

typedef void (*KtuneOptunaTrialVisitor)(void* context, const KtuneOptunaTrial* trial);

typedef struct KtuneOptunaApi {
  uint32_t abi_version;  // KTUNE_OPTUNA_ABI_VERSION
  uint32_t struct_size;  // sizeof(KtuneOptunaApi) of the module

  // Starts Python on first use, imports optuna and creates (or loads) the study.
  int (*create_study)(const KtuneOptunaStudySpec* spec, KtuneOptunaStudy** study, char** error);
  void (*destroy_study)(KtuneOptunaStudy* study);
  // Asks for a trial: with fixed = null the sampler picks, else the trial is enqueued with
  // these indices first. Writes the trial's number and its param_count indices.
  int (*ask)(KtuneOptunaStudy* study, const uint32_t* fixed, int64_t* number, uint32_t* params,
             char** error);
  // Finishes a trial. value is used only for COMPLETE; config_key and status, when not null,
  // become the user attributes "ktune_config" and "ktune_status".
  int (*tell)(KtuneOptunaStudy* study, int64_t number, int32_t state, double value,
              const char* config_key, const char* status, char** error);
  // Visits the study's trials with number >= first, in number order.
  int (*trials)(KtuneOptunaStudy* study, int64_t first, KtuneOptunaTrialVisitor visit,
                void* context, char** error);
  void (*free_message)(char* message);
  // "Python 3.11.2 (/usr/bin/python3, prefix /usr), Optuna 3.1.0" once started, else what
  // would be started.
  int (*describe)(char** description, char** error);
  // Appended: a lock over every worker of a shared study (its storage), taken around a batch
  // of asks and the read of the trials before them, so that no two workers draw the same
  // configuration. A study without a storage has nothing to lock; both then do nothing. The
  // lock dies with its process (an fcntl lock on a file beside the storage, or a PostgreSQL or
  // MySQL session lock), so a killed worker never leaves the others waiting.
  int (*lock)(KtuneOptunaStudy* study, char** error);
  int (*unlock)(KtuneOptunaStudy* study, char** error);
  // Writes the user attribute "ktune_config" on a trial still running: in a shared study, the
  // configuration a projected proposal will measure, so other workers see it taken.
  int (*claim)(KtuneOptunaStudy* study, int64_t number, const char* config_key, char** error);
} KtuneOptunaApi;

typedef const KtuneOptunaApi* (*KtuneOptunaEntry)(void);

#ifdef __cplusplus
}
#endif

#endif  // KTUNE_OPTUNA_MODULE_H

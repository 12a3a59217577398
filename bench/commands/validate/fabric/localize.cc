// Placeholder while the implementation is written on its branch; replaced before landing.
#include "bench/commands/validate/fabric/localize.h"

// The module is its header alone; SwiftPM needs a source file to build a C target.
#include "CEpoll.h"

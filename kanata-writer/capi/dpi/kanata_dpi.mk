# kanata_dpi.mk: what a Makefile needs to build a testbench with kanata_dpi.sv.
#
#   include path/to/kanata-writer/capi/dpi/kanata_dpi.mk
#   verilator --binary ... $(KANATA_DPI_SV) my_tb.sv $(KANATA_DPI_C) \
#       -CFLAGS "$(KANATA_DPI_CFLAGS)" -LDFLAGS "$(KANATA_DPI_LDFLAGS)"
#
# KANATA_LIB is the libkanata_writer.a to link; by default the release build of this
# workspace, which the rule below brings up to date with cargo (list $(KANATA_LIB) as a
# prerequisite of the simulator). Set KANATA_LIB to use another build (then cargo is not run).
# KANATA_DPI_TOP is the top module's name, for the DPI header Verilator generates
# (V<top>__Dpi.h): kanata_dpi.c includes it, so a definition that does not match its import
# is a compile error.

KANATA_DPI_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
KANATA_CAPI_DIR := $(abspath $(KANATA_DPI_DIR)/..)
KANATA_ROOT := $(abspath $(KANATA_CAPI_DIR)/../..)
CARGO ?= cargo

ifeq ($(origin KANATA_LIB),undefined)
KANATA_LIB := $(KANATA_ROOT)/target/release/libkanata_writer.a
# cargo decides whether the library is up to date; when it is, the file's time does not
# change and nothing that depends on it is rebuilt.
.PHONY: kanata-dpi-force
$(KANATA_LIB): kanata-dpi-force
	cd $(KANATA_ROOT) && $(CARGO) build --release -p kanata-writer-capi
kanata-dpi-force:
endif

KANATA_DPI_SV := $(KANATA_DPI_DIR)/kanata_dpi.sv
KANATA_DPI_C := $(KANATA_DPI_DIR)/kanata_dpi.c
KANATA_DPI_CFLAGS := -I$(KANATA_CAPI_DIR)/include \
    $(if $(KANATA_DPI_TOP),-DKANATA_DPI_HEADER='\"V$(KANATA_DPI_TOP)__Dpi.h\"')
# The system libraries the Rust standard library needs on Linux.
KANATA_DPI_LDFLAGS := $(KANATA_LIB) -lpthread -ldl -lm
KANATA_DPI_DEPS := $(KANATA_DPI_SV) $(KANATA_DPI_C) $(KANATA_CAPI_DIR)/include/kanata_writer.h \
    $(KANATA_LIB)

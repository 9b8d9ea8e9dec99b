// GoogleTest assertions on the C API's results: a failure prints the library's own sentence.
#pragma once

#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#define ASSERT_MS_OK(expr) ASSERT_EQ((expr), MS_OK) << ms_last_error_text()

/* SPDX-License-Identifier: MIT */
/* The token parser: one spelling per token, nothing a script bug could
   turn into a token nobody issued. */
#include "helpers.h"

static void accepts_decimal_from_1_to_uint64_max(void **state)
{
	uint64_t t = 0;

	(void)state;
	assert_int_equal(fw_parse_token("1", &t), FW_OK);
	assert_true(t == 1);
	assert_int_equal(fw_parse_token("42", &t), FW_OK);
	assert_true(t == 42);
	assert_int_equal(fw_parse_token("18446744073709551615", &t), FW_OK);
	assert_true(t == UINT64_MAX);
	/* Leading zeros are still decimal digits: 007 is 7. */
	assert_int_equal(fw_parse_token("007", &t), FW_OK);
	assert_true(t == 7);
}

static void rejects_every_other_spelling_and_leaves_output_alone(void **state)
{
	static const char *bad[] = {
		"", "0", "00", "-1", "+8", "0x8", " 8", "8 ", "8x", "8\n",
		"1e3", "8.0", "18446744073709551616", "99999999999999999999",
		"184467440737095516150", "\t8", "８",
	};
	uint64_t t = 12345;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (fw_parse_token(bad[i], &t) != FW_USAGE)
			fail_msg("token '%s' was accepted", bad[i]);
		assert_true(t == 12345);
	}
	assert_int_equal(fw_parse_token(NULL, &t), FW_USAGE);
}

static void strerror_names_every_code(void **state)
{
	(void)state;
	for (int c = FW_OK; c <= FW_SYSTEM; c++)
		assert_string_not_equal(fw_strerror(c),
		                        fw_strerror(FW_SYSTEM + 1));
	assert_string_equal(fw_strerror(FW_STALE), "stale token");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(accepts_decimal_from_1_to_uint64_max),
		cmocka_unit_test(rejects_every_other_spelling_and_leaves_output_alone),
		cmocka_unit_test(strerror_names_every_code),
	};
	return cmocka_run_group_tests_name("token", tests, NULL, NULL);
}

/* Preprocessor helpers for generating handlers and calls for every argument count 0..16.
 *
 *   PARAMS_N         ", int32_t a0, ..., int32_t aN-1"      (empty for N = 0)
 *   STORE_N(arr)     "arr[0] = a0; ... arr[N-1] = aN-1;"
 *   VALS_N(F)        ", F(0), ..., F(N-1)"                  (empty for N = 0)
 *   FOR_EACH_N(M)    M(0) M(1) ... M(16)
 *   APPLY(f, (args)) f(args) after expanding args, so that the commas produced by
 *                    VALS_N count as argument separators for a function-like macro f
 */
#ifndef RAMP_CTEST_ARGMACROS_H
#define RAMP_CTEST_ARGMACROS_H

#define PARAMS_0
#define PARAMS_1 PARAMS_0, int32_t a0
#define PARAMS_2 PARAMS_1, int32_t a1
#define PARAMS_3 PARAMS_2, int32_t a2
#define PARAMS_4 PARAMS_3, int32_t a3
#define PARAMS_5 PARAMS_4, int32_t a4
#define PARAMS_6 PARAMS_5, int32_t a5
#define PARAMS_7 PARAMS_6, int32_t a6
#define PARAMS_8 PARAMS_7, int32_t a7
#define PARAMS_9 PARAMS_8, int32_t a8
#define PARAMS_10 PARAMS_9, int32_t a9
#define PARAMS_11 PARAMS_10, int32_t a10
#define PARAMS_12 PARAMS_11, int32_t a11
#define PARAMS_13 PARAMS_12, int32_t a12
#define PARAMS_14 PARAMS_13, int32_t a13
#define PARAMS_15 PARAMS_14, int32_t a14
#define PARAMS_16 PARAMS_15, int32_t a15

#define STORE_0(r)
#define STORE_1(r) STORE_0(r) r[0] = a0;
#define STORE_2(r) STORE_1(r) r[1] = a1;
#define STORE_3(r) STORE_2(r) r[2] = a2;
#define STORE_4(r) STORE_3(r) r[3] = a3;
#define STORE_5(r) STORE_4(r) r[4] = a4;
#define STORE_6(r) STORE_5(r) r[5] = a5;
#define STORE_7(r) STORE_6(r) r[6] = a6;
#define STORE_8(r) STORE_7(r) r[7] = a7;
#define STORE_9(r) STORE_8(r) r[8] = a8;
#define STORE_10(r) STORE_9(r) r[9] = a9;
#define STORE_11(r) STORE_10(r) r[10] = a10;
#define STORE_12(r) STORE_11(r) r[11] = a11;
#define STORE_13(r) STORE_12(r) r[12] = a12;
#define STORE_14(r) STORE_13(r) r[13] = a13;
#define STORE_15(r) STORE_14(r) r[14] = a14;
#define STORE_16(r) STORE_15(r) r[15] = a15;

#define VALS_0(F)
#define VALS_1(F) VALS_0(F), F(0)
#define VALS_2(F) VALS_1(F), F(1)
#define VALS_3(F) VALS_2(F), F(2)
#define VALS_4(F) VALS_3(F), F(3)
#define VALS_5(F) VALS_4(F), F(4)
#define VALS_6(F) VALS_5(F), F(5)
#define VALS_7(F) VALS_6(F), F(6)
#define VALS_8(F) VALS_7(F), F(7)
#define VALS_9(F) VALS_8(F), F(8)
#define VALS_10(F) VALS_9(F), F(9)
#define VALS_11(F) VALS_10(F), F(10)
#define VALS_12(F) VALS_11(F), F(11)
#define VALS_13(F) VALS_12(F), F(12)
#define VALS_14(F) VALS_13(F), F(13)
#define VALS_15(F) VALS_14(F), F(14)
#define VALS_16(F) VALS_15(F), F(15)

#define APPLY(f, args) f args

#define FOR_EACH_N(M) \
  M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15) M(16)

#endif

/* t_tables: translation-table and handler-table semantics (spec §2.6, §2.8), bundles
 * and endpoint moves (§2.3, as testam's private endpoint), segments (§2.4), and
 * AM_Init / AM_Terminate reference counting (§2.2).
 */
#include "common.h"

static int h_ran;
static ep_t g_ep1;
static en_t g_name1;
static tag_t g_t1 = 0x1234ABCDULL;
static void h_count(void *token) {
  int id = -1;
  AM_SAFE(ramp_GetSourceId(token, &id));
  CHECK(id == 0, "ramp_GetSourceId %d, expected 0", id);
  en_t src;
  AM_SAFE(AM_GetSourceEndpoint(token, &src));
  CHECK(ramp_enEqual(src, g_name1), "source endpoint %s, expected own name %s", en_str(src), en_str(g_name1));
  ep_t d = NULL;
  AM_SAFE(AM_GetDestEndpoint(token, &d));
  CHECK(d == g_ep1, "AM_GetDestEndpoint %p, expected %p", (void *)d, (void *)g_ep1);
  tag_t t = 0;
  AM_SAFE(AM_GetMsgTag(token, &t));
  CHECK(t == g_t1, "AM_GetMsgTag 0x%" PRIx64, (uint64_t)t);
  h_ran++;
}
static void h_count_last(void *token) {
  int id = -1;
  AM_SAFE(ramp_GetSourceId(token, &id));
  CHECK(id == (1 << 20) - 1, "ramp_GetSourceId %d, expected %d", id, (1 << 20) - 1);
  h_ran++;
}
static void h_other(void *token) {
  (void)token;
}

static en_t name_of(eb_t eb, ep_t *out) {
  en_t n;
  AM_SAFE(AM_AllocateEndpoint(eb, out, &n));
  return n;
}

int main(void) {
  ct_init("t_tables", CT_WATCHDOG_SECS);

  PHASE("before AM_Init");
  eb_t eb = NULL;
  EXPECT_RC(AM_AllocateBundle(AM_SEQ, &eb), AM_ERR_NOT_INIT);
  EXPECT_RC(AM_Terminate(), AM_OK); /* not initialised: AM_OK, and the counter is not decremented */

  PHASE("AM_Init reference counting");
  EXPECT_RC(AM_Init(), AM_OK);
  EXPECT_RC(AM_Init(), AM_OK);
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb));
  EXPECT_RC(AM_Terminate(), AM_OK); /* 2 -> 1: still initialised, bundle alive */
  AM_SAFE(AM_Poll(eb));
  eb_t eb_b;
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb_b));
  ep_t ep_b;
  en_t nb = name_of(eb_b, &ep_b);
  (void)nb;
  EXPECT_RC(AM_Terminate(), AM_OK); /* 1 -> 0: frees every bundle and endpoint */
  eb_t eb_c = NULL;
  EXPECT_RC(AM_AllocateBundle(AM_SEQ, &eb_c), AM_ERR_NOT_INIT);
  EXPECT_RC(AM_Terminate(), AM_OK);
  EXPECT_RC(AM_Init(), AM_OK);
  /* the bundles freed by the last AM_Terminate are gone */
  EXPECT_RC(AM_FreeBundle(eb), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_FreeBundle(eb_b), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_FreeEndpoint(ep_b), AM_ERR_BAD_ARG);

  PHASE("system parameters");
  CHECK(AM_MaxNumHandlers() >= 256, "AM_MaxNumHandlers() = %d", (int)AM_MaxNumHandlers());
  unsigned maxtrans = 0;
  EXPECT_RC(AM_MaxNumTranslations(&maxtrans), AM_OK);
  CHECK(maxtrans >= (1u << 20), "AM_MaxNumTranslations = %u", maxtrans);
  uintptr_t maxseg = 0;
  AM_SAFE(AM_MaxSegLength(&maxseg));
  CHECK(maxseg >= (uintptr_t)AM_MaxLong(), "AM_MaxSegLength = %lu", (unsigned long)maxseg);

  PHASE("new endpoint state");
  eb_t eb1, eb2;
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb1));
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb2));
  int mask = -1;
  AM_SAFE(AM_GetEventMask(eb1, &mask));
  CHECK(mask == AM_NOEVENTS, "new bundle mask %d", mask);
  ep_t ep1;
  en_t n1 = name_of(eb1, &ep1);
  g_ep1 = ep1;
  g_name1 = n1;
  tag_t t = 77;
  AM_SAFE(AM_GetTag(ep1, &t));
  CHECK(t == AM_NONE, "new endpoint tag 0x%" PRIx64 ", expected AM_NONE", (uint64_t)t);
  void *sa = (void *)1;
  uintptr_t sn = 1;
  AM_SAFE(AM_GetSeg(ep1, &sa, &sn));
  CHECK(sa == NULL && sn == 0, "new endpoint segment (%p, %lu)", sa, (unsigned long)sn);
  int nt = 0;
  AM_SAFE(AM_GetNumTranslations(ep1, &nt));
  CHECK(nt == 256, "initial translation table size %d, expected 256", nt);
  for (int i = 0; i < 256; i++) EXPECT_RC(AM_GetTranslationInuse(ep1, i), AM_ERR_RESOURCE);
  EXPECT_RC(AM_GetTranslationInuse(ep1, 256), AM_ERR_BAD_ARG);
  int nh = 0;
  EXPECT_RC(AM_GetNumHandlers(ep1, &nh), AM_OK);
  CHECK(nh >= 256, "AM_GetNumHandlers %d", nh);
  EXPECT_RC(AM_SetNumHandlers(ep1, AM_MaxNumHandlers()), AM_OK);

  PHASE("Map / MapAny / UnMap");
  ep_t other;
  en_t no = name_of(eb2, &other);
  AM_SAFE(AM_Map(ep1, 5, no, 0xF00D));
  EXPECT_RC(AM_GetTranslationInuse(ep1, 5), AM_OK);
  EXPECT_RC(AM_GetTranslationInuse(ep1, 4), AM_ERR_RESOURCE);
  en_t gn;
  AM_SAFE(AM_GetTranslationTag(ep1, 5, &t));
  AM_SAFE(AM_GetTranslationName(ep1, 5, &gn));
  CHECK(t == 0xF00D && ramp_enEqual(gn, no), "entry 5 = (%s, 0x%" PRIx64 ")", en_str(gn), (uint64_t)t);
  int idx = -1;
  for (int want = 0; want < 8; want++) {
    if (want == 5) continue;
    AM_SAFE(AM_MapAny(ep1, &idx, no, (tag_t)(0x100 + want)));
    CHECK(idx == want, "AM_MapAny gave %d, expected the lowest free entry %d", idx, want);
  }
  AM_SAFE(AM_UnMap(ep1, 2));
  EXPECT_RC(AM_UnMap(ep1, 2), AM_ERR_RESOURCE);
  EXPECT_RC(AM_GetTranslationInuse(ep1, 2), AM_ERR_RESOURCE);
  EXPECT_RC(AM_GetTranslationTag(ep1, 2, &t), AM_ERR_RESOURCE);
  AM_SAFE(AM_MapAny(ep1, &idx, no, 0x222));
  CHECK(idx == 2, "AM_MapAny after UnMap(2) gave %d, expected 2", idx);
  AM_SAFE(AM_MapAny(ep1, &idx, no, 0x888));
  CHECK(idx == 8, "AM_MapAny gave %d, expected 8", idx);
  /* fill the table, then MapAny fails */
  for (int i = 9; i < 256; i++) AM_SAFE(AM_Map(ep1, i, no, (tag_t)i));
  idx = -7;
  EXPECT_RC(AM_MapAny(ep1, &idx, no, 1), AM_ERR_RESOURCE);
  CHECK(idx == -7, "failed MapAny wrote *index (%d)", idx);
  for (int i = 0; i < 256; i++) {
    EXPECT_RC(AM_GetTranslationInuse(ep1, i), AM_OK);
    AM_SAFE(AM_UnMap(ep1, i));
  }

  PHASE("Set/GetNumTranslations");
  AM_SAFE(AM_SetNumTranslations(ep1, 100)); /* raised to 256 */
  AM_SAFE(AM_GetNumTranslations(ep1, &nt));
  CHECK(nt == 256, "SetNumTranslations(100) gave size %d, expected 256", nt);
  AM_SAFE(AM_SetNumTranslations(ep1, 0));
  AM_SAFE(AM_GetNumTranslations(ep1, &nt));
  CHECK(nt == 256, "SetNumTranslations(0) gave size %d, expected 256", nt);
  AM_SAFE(AM_SetNumTranslations(ep1, 4096));
  AM_SAFE(AM_GetNumTranslations(ep1, &nt));
  CHECK(nt == 4096, "SetNumTranslations(4096) gave size %d", nt);
  EXPECT_RC(AM_GetTranslationInuse(ep1, 4095), AM_ERR_RESOURCE);
  EXPECT_RC(AM_GetTranslationInuse(ep1, 4096), AM_ERR_BAD_ARG);
  AM_SAFE(AM_Map(ep1, 4095, no, 0x4095));
  AM_SAFE(AM_Map(ep1, 3000, no, 0x3000));
  EXPECT_RC(AM_Map(ep1, 4096, no, 1), AM_ERR_BAD_ARG);
  AM_SAFE(AM_MapAny(ep1, &idx, no, 0x1));
  CHECK(idx == 0, "MapAny in a 4096 table gave %d", idx);
  AM_SAFE(AM_UnMap(ep1, 0));
  EXPECT_RC(AM_SetNumTranslations(ep1, 1024), AM_ERR_RESOURCE); /* would drop live entries */
  AM_SAFE(AM_GetNumTranslations(ep1, &nt));
  CHECK(nt == 4096, "refused shrink changed the size to %d", nt);
  AM_SAFE(AM_GetTranslationTag(ep1, 4095, &t));
  CHECK(t == 0x4095, "entry 4095 lost after refused shrink");
  AM_SAFE(AM_UnMap(ep1, 4095));
  AM_SAFE(AM_UnMap(ep1, 3000));
  AM_SAFE(AM_SetNumTranslations(ep1, (int)maxtrans)); /* the maximum (per-peer state is lazy) */
  AM_SAFE(AM_GetNumTranslations(ep1, &nt));
  CHECK(nt == (int)maxtrans, "SetNumTranslations(max) gave %d", nt);
  AM_SAFE(AM_Map(ep1, (int)maxtrans - 1, no, 0x77));
  EXPECT_RC(AM_GetTranslationInuse(ep1, (int)maxtrans - 1), AM_OK);
  AM_SAFE(AM_UnMap(ep1, (int)maxtrans - 1));
  EXPECT_RC(AM_SetNumTranslations(ep1, (int)maxtrans + 1), AM_ERR_RESOURCE);
  /* testam: min(max, 1024), and Get returns exactly that */
  AM_SAFE(AM_SetNumTranslations(ep1, 1024));
  AM_SAFE(AM_GetNumTranslations(ep1, &nt));
  CHECK(nt == 1024, "SetNumTranslations(1024) gave %d", nt);

  PHASE("handler table");
  handler_t h = 0;
  AM_SAFE(AM_SetHandler(ep1, 0, h_other)); /* index 0 is legal */
  AM_SAFE(AM_SetHandler(ep1, 1, h_other));
  AM_SAFE(AM_SetHandler(ep1, 3, h_other));
  AM_SAFE(AM_SetHandlerAny(ep1, &h, h_other));
  CHECK(h == 2, "AM_SetHandlerAny gave %d, expected 2 (lowest free in 1..255)", (int)h);
  int got = 0;
  for (;;) {
    int rc = AM_SetHandlerAny(ep1, &h, h_other);
    if (rc == AM_ERR_RESOURCE) break;
    CHECK(rc == AM_OK, "AM_SetHandlerAny returned %s", ct_errname(rc));
    CHECK(h >= 1, "AM_SetHandlerAny returned index %d (0 is reserved)", (int)h);
    got++;
    CHECK(got <= 255, "AM_SetHandlerAny never runs out");
  }
  CHECK(got == 255 - 3, "AM_SetHandlerAny filled %d slots, expected %d", got, 255 - 3);
  AM_SAFE(AM_SetHandler(ep1, 255, h_other)); /* replacing an installed handler is fine */
  EXPECT_RC(AM_SetHandlerAny(ep1, &h, h_other), AM_ERR_RESOURCE);

  PHASE("fresh endpoint for the move test");
  ep_t ep2;
  en_t n2 = name_of(eb1, &ep2);
  g_ep1 = ep2;
  g_name1 = n2;
  static uint8_t seg[4];
  AM_SAFE(AM_SetNumTranslations(ep2, 1024));
  AM_SAFE(AM_MapAny(ep2, &idx, n2, g_t1));
  CHECK(idx == 0, "MapAny own name gave %d", idx);
  EXPECT_RC(AM_GetTranslationInuse(ep2, idx), AM_OK);
  AM_SAFE(AM_GetTranslationTag(ep2, idx, &t));
  CHECK(t == g_t1, "tag of own entry 0x%" PRIx64, (uint64_t)t);
  AM_SAFE(AM_UnMap(ep2, idx));
  AM_SAFE(AM_Map(ep2, idx, n2, g_t1));
  AM_SAFE(AM_SetSeg(ep2, seg, sizeof seg));
  AM_SAFE(AM_SetTag(ep2, g_t1));

  PHASE("AM_MoveEndpoint + AM_FreeBundle(source)");
  eb_t eb3;
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb3));
  AM_SAFE(AM_MoveEndpoint(ep2, eb1, eb3));
  EXPECT_RC(AM_MoveEndpoint(ep2, eb1, eb3), AM_ERR_RESOURCE); /* not in eb1 any more */
  AM_SAFE(AM_FreeBundle(eb1)); /* frees ep1 but not the moved ep2 */
  EXPECT_RC(AM_GetTag(ep1, &t), AM_ERR_BAD_ARG);
  AM_SAFE(AM_GetTag(ep2, &t));
  CHECK(t == g_t1, "tag after move 0x%" PRIx64, (uint64_t)t);
  AM_SAFE(AM_GetSeg(ep2, &sa, &sn));
  CHECK(sa == seg && sn == sizeof seg, "segment after move (%p, %lu)", sa, (unsigned long)sn);
  AM_SAFE(AM_GetNumTranslations(ep2, &nt));
  CHECK(nt == 1024, "table size after move %d", nt);
  EXPECT_RC(AM_GetTranslationInuse(ep2, 0), AM_OK);
  AM_SAFE(AM_GetTranslationName(ep2, 0, &gn));
  CHECK(ramp_enEqual(gn, n2), "translation name after move %s, expected %s", en_str(gn), en_str(n2));
  AM_SAFE(AM_GetTranslationTag(ep2, 0, &t));
  CHECK(t == g_t1, "translation tag after move");
  AM_SAFE(AM_SetExpectedResources(ep2, 1, 1));
  handler_t hi = 0;
  AM_SAFE(AM_SetHandlerAny(ep2, &hi, h_count));
  CHECK(hi >= 1, "SetHandlerAny gave %d", (int)hi);
  AM_SAFE(AM_Request0(ep2, 0, hi));
  CHECK(h_ran == 1, "loopback request on the moved endpoint: handler ran %d times", h_ran);
  AM_SAFE(AM_Poll(eb3));

  PHASE("after AM_SetExpectedResources");
  EXPECT_RC(AM_Map(ep2, 1, n2, 1), AM_ERR_RESOURCE);
  EXPECT_RC(AM_MapAny(ep2, &idx, n2, 1), AM_ERR_RESOURCE);
  EXPECT_RC(AM_UnMap(ep2, 0), AM_ERR_RESOURCE);
  EXPECT_RC(AM_SetNumTranslations(ep2, 2048), AM_ERR_RESOURCE);
  EXPECT_RC(AM_SetNumTranslations(ep2, 1024), AM_OK); /* no change: a no-op */
  EXPECT_RC(AM_GetTranslationInuse(ep2, 0), AM_OK);
  AM_SAFE(AM_GetTranslationName(ep2, 0, &gn));
  AM_SAFE(ramp_SetTranslationTag(ep2, 0, 0xCAFE));
  AM_SAFE(AM_GetTranslationTag(ep2, 0, &t));
  CHECK(t == 0xCAFE, "ramp_SetTranslationTag after SetExpectedResources: tag 0x%" PRIx64, (uint64_t)t);
  AM_SAFE(AM_SetHandler(ep2, 200, h_other)); /* handlers may be set at any time */
  AM_SAFE(AM_SetSeg(ep2, NULL, 0));          /* and segments */
  AM_SAFE(AM_GetSeg(ep2, &sa, &sn));
  CHECK(sa == NULL && sn == 0, "SetSeg(NULL, 0) gave (%p, %lu)", sa, (unsigned long)sn);

  PHASE("a translation at the last index of a maximum-size table");
  {
    ep_t ep3;
    en_t n3 = name_of(eb3, &ep3);
    g_ep1 = ep3;
    g_name1 = n3;
    AM_SAFE(AM_SetTag(ep3, g_t1));
    AM_SAFE(AM_SetNumTranslations(ep3, (int)maxtrans));
    AM_SAFE(AM_Map(ep3, (int)maxtrans - 1, n3, g_t1));
    AM_SAFE(AM_SetExpectedResources(ep3, 1, 1));
    handler_t hb = 0;
    AM_SAFE(AM_SetHandlerAny(ep3, &hb, h_count_last));
    h_ran = 0;
    AM_SAFE(AM_Request0(ep3, maxtrans - 1, hb));
    CHECK(h_ran == 1, "loopback request to index %u: handler ran %d times", maxtrans - 1, h_ran);
    EXPECT_RC(AM_Request0(ep3, maxtrans, hb), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_Request0(ep3, 0, hb), AM_ERR_BAD_ARG);
    AM_SAFE(AM_FreeEndpoint(ep3));
  }

  PHASE("free");
  AM_SAFE(AM_FreeEndpoint(ep2));
  EXPECT_RC(AM_GetTag(ep2, &t), AM_ERR_BAD_ARG);
  AM_SAFE(AM_Poll(eb3)); /* empty bundle */
  AM_SAFE(AM_FreeBundle(eb3));
  AM_SAFE(AM_FreeBundle(eb2));
  AM_SAFE(AM_Terminate());
  printf("t_tables: OK\n");
  return 0;
}

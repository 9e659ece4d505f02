/*
 * expr.c - a recursive-descent parser into a small tree, and its
 * evaluator.  The depth limit bounds the recursion of both, so no input
 * can exhaust the stack.
 */
#include "sim/base/expr.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/xalloc.h"

enum node_kind { N_NUM, N_VAR, N_UNARY, N_BINARY, N_COND, N_CALL };

enum func { F_MIN, F_MAX, F_POW, F_FLOOR, F_CEIL, F_ROUND, F_SQRT, F_LOG2,
            F_ABS, F_COUNT };
static const struct {
  const char *name;
  int args;
} funcs[F_COUNT] = {{"min", 2},   {"max", 2},  {"pow", 2},
                    {"floor", 1}, {"ceil", 1}, {"round", 1},
                    {"sqrt", 1},  {"log2", 1}, {"abs", 1}};

struct node {
  enum node_kind kind;
  int op;           /* operator character, or a two-character code below;
                       the function of N_CALL */
  double num;       /* N_NUM */
  char *name;       /* N_VAR, owned */
  struct node *a, *b, *c;
};

/* Two-character operators as single codes. */
enum { OP_EQ = 256, OP_NE, OP_LE, OP_GE, OP_AND, OP_OR };

struct expr {
  struct node *root;
};

struct parser {
  const char *src, *p;
  const char *origin;
  int depth;
  struct weft_err *err;
};

static void node_free(struct node *n)
{
  if (!n)
    return;
  node_free(n->a);
  node_free(n->b);
  node_free(n->c);
  free(n->name);
  free(n);
}

static struct node *node_new(enum node_kind kind, int op, struct node *a,
                             struct node *b)
{
  struct node *n = xcalloc(1, sizeof *n);
  n->kind = kind;
  n->op = op;
  n->a = a;
  n->b = b;
  return n;
}

static struct node *fail(struct parser *ps, const char *what)
{
  if (!*ps->p)
    weft_errf(ps->err, WEFT_EINVAL, "%s: %s at the end of '%s'", ps->origin,
              what, ps->src);
  else
    weft_errf(ps->err, WEFT_EINVAL, "%s: %s at character %ld of '%s'",
              ps->origin, what, (long)(ps->p - ps->src) + 1, ps->src);
  return NULL;
}

static void skip(struct parser *ps)
{
  while (*ps->p && isspace((unsigned char)*ps->p))
    ps->p++;
}

/* Consume `tok` if it comes next. */
static bool eat(struct parser *ps, const char *tok)
{
  skip(ps);
  size_t n = strlen(tok);
  if (strncmp(ps->p, tok, n) != 0)
    return false;
  /* "<" must not take the first half of "<=", nor "!" of "!=". */
  if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!' ||
                 tok[0] == '=') && ps->p[1] == '=')
    return false;
  ps->p += n;
  return true;
}

static struct node *parse_cond(struct parser *ps);

static struct node *parse_primary(struct parser *ps)
{
  skip(ps);
  const char *s = ps->p;
  if (eat(ps, "(")) {
    struct node *n = parse_cond(ps);
    if (!n)
      return NULL;
    if (!eat(ps, ")")) {
      node_free(n);
      return fail(ps, "expected ')'");
    }
    return n;
  }
  if (isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1]))) {
    char *end;
    double v = strtod(s, &end);
    if (isalpha((unsigned char)*end) || *end == '_')
      return fail(ps, "a number runs into a name");
    /* strtod gives infinity for "1e999": refuse it here, as eval refuses
     * any other result that is not finite. */
    if (!isfinite(v))
      return fail(ps, "a number too large");
    ps->p = end;
    struct node *n = node_new(N_NUM, 0, NULL, NULL);
    n->num = v;
    return n;
  }
  if (isalpha((unsigned char)*s) || *s == '_') {
    const char *e = s;
    while (isalnum((unsigned char)*e) || *e == '_')
      e++;
    size_t len = (size_t)(e - s);
    ps->p = e;
    skip(ps);
    if (*ps->p != '(') {
      struct node *n = node_new(N_VAR, 0, NULL, NULL);
      n->name = xmalloc(len + 1);
      memcpy(n->name, s, len);
      n->name[len] = '\0';
      return n;
    }
    int f = 0;
    while (f < F_COUNT && !(strlen(funcs[f].name) == len &&
                            strncmp(funcs[f].name, s, len) == 0))
      f++;
    if (f == F_COUNT) {
      ps->p = s;
      return fail(ps, "unknown function (min, max, pow, floor, ceil, round, "
                  "sqrt, log2, abs)");
    }
    ps->p++; /* ( */
    struct node *n = node_new(N_CALL, f, NULL, NULL);
    n->a = parse_cond(ps);
    if (n->a && funcs[f].args == 2) {
      if (!eat(ps, ",")) {
        node_free(n);
        return fail(ps, "expected ',' (this function takes two arguments)");
      }
      n->b = parse_cond(ps);
    }
    if (!n->a || (funcs[f].args == 2 && !n->b)) {
      node_free(n);
      return NULL;
    }
    if (!eat(ps, ")")) {
      node_free(n);
      return fail(ps, funcs[f].args == 1 ? "expected ')' (this function "
                  "takes one argument)" : "expected ')'");
    }
    return n;
  }
  return fail(ps, "expected a number, a name or '('");
}

static struct node *parse_unary(struct parser *ps);

/* primary ('^' unary)? : right-associative, and tighter than unary minus
 * on its left (-2^2 is -4). */
static struct node *parse_power(struct parser *ps)
{
  struct node *a = parse_primary(ps);
  if (a && eat(ps, "^")) {
    struct node *b = parse_unary(ps);
    if (!b) {
      node_free(a);
      return NULL;
    }
    return node_new(N_BINARY, '^', a, b);
  }
  return a;
}

static struct node *parse_unary(struct parser *ps)
{
  if (++ps->depth > EXPR_MAX_DEPTH)
    return fail(ps, "nested too deeply");
  struct node *n;
  if (eat(ps, "-")) {
    struct node *a = parse_unary(ps);
    n = a ? node_new(N_UNARY, '-', a, NULL) : NULL;
  } else if (eat(ps, "!")) {
    struct node *a = parse_unary(ps);
    n = a ? node_new(N_UNARY, '!', a, NULL) : NULL;
  } else {
    n = parse_power(ps);
  }
  ps->depth--;
  return n;
}

/* One left-associative level: operands from `next`, operators from
 * `ops` (tokens) mapped to `codes`. */
static struct node *parse_level(struct parser *ps,
                                struct node *(*next)(struct parser *),
                                const char *const *ops, const int *codes,
                                bool chain)
{
  struct node *a = next(ps);
  while (a) {
    int k = 0;
    while (ops[k] && !eat(ps, ops[k]))
      k++;
    if (!ops[k])
      break;
    struct node *b = next(ps);
    if (!b) {
      node_free(a);
      return NULL;
    }
    a = node_new(N_BINARY, codes[k], a, b);
    if (!chain)
      break;
  }
  return a;
}

static struct node *parse_mul(struct parser *ps)
{
  static const char *const ops[] = {"*", "/", "%", NULL};
  static const int codes[] = {'*', '/', '%'};
  return parse_level(ps, parse_unary, ops, codes, true);
}

static struct node *parse_add(struct parser *ps)
{
  static const char *const ops[] = {"+", "-", NULL};
  static const int codes[] = {'+', '-'};
  return parse_level(ps, parse_mul, ops, codes, true);
}

static struct node *parse_cmp(struct parser *ps)
{
  static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">", NULL};
  static const int codes[] = {OP_EQ, OP_NE, OP_LE, OP_GE, '<', '>'};
  return parse_level(ps, parse_add, ops, codes, false);
}

static struct node *parse_and(struct parser *ps)
{
  static const char *const ops[] = {"&&", NULL};
  static const int codes[] = {OP_AND};
  return parse_level(ps, parse_cmp, ops, codes, true);
}

static struct node *parse_or(struct parser *ps)
{
  static const char *const ops[] = {"||", NULL};
  static const int codes[] = {OP_OR};
  return parse_level(ps, parse_and, ops, codes, true);
}

static struct node *parse_cond(struct parser *ps)
{
  if (++ps->depth > EXPR_MAX_DEPTH)
    return fail(ps, "nested too deeply");
  struct node *c = parse_or(ps);
  if (c && eat(ps, "?")) {
    struct node *a = parse_cond(ps);
    struct node *b = NULL;
    if (a && !eat(ps, ":")) {
      fail(ps, "expected ':'");
    } else if (a) {
      b = parse_cond(ps);
    }
    if (!a || !b) {
      node_free(c);
      node_free(a);
      c = NULL;
    } else {
      struct node *n = node_new(N_COND, '?', a, b);
      n->c = c;
      c = n;
    }
  }
  ps->depth--;
  return c;
}

struct expr *expr_parse(const char *src, const char *origin,
                        struct weft_err *err)
{
  struct parser ps = {src, src, origin, 0, err};
  if (strlen(src) > EXPR_MAX_LEN) {
    weft_errf(err, WEFT_ELIMIT, "%s: longer than %d characters", origin,
              EXPR_MAX_LEN);
    return NULL;
  }
  struct node *root = parse_cond(&ps);
  if (root) {
    skip(&ps);
    if (*ps.p) {
      node_free(root);
      root = fail(&ps, "unexpected text");
    }
  }
  if (!root)
    return NULL;
  struct expr *e = xmalloc(sizeof *e);
  e->root = root;
  return e;
}

void expr_free(struct expr *e)
{
  if (!e)
    return;
  node_free(e->root);
  free(e);
}

static int each_var(const struct node *n, int (*fn)(void *, const char *),
                    void *ctx)
{
  if (!n)
    return 0;
  if (n->kind == N_VAR)
    return fn(ctx, n->name);
  int rc = each_var(n->c, fn, ctx);
  if (!rc)
    rc = each_var(n->a, fn, ctx);
  if (!rc)
    rc = each_var(n->b, fn, ctx);
  return rc;
}

int expr_each_var(const struct expr *e, int (*fn)(void *ctx, const char *name),
                  void *ctx)
{
  return each_var(e->root, fn, ctx);
}

struct evalctx {
  expr_lookup_fn lookup;
  void *ctx;
  struct weft_err *err;
};

static int eval(const struct node *n, struct evalctx *ev, double *out)
{
  double a = 0, b = 0;
  switch (n->kind) {
  case N_NUM:
    *out = n->num;
    return 0;
  case N_VAR: {
    const char *v = ev->lookup(ev->ctx, n->name);
    if (!v)
      return weft_errf(ev->err, WEFT_EINVAL, "'%s' is not set", n->name);
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x))
      return weft_errf(ev->err, WEFT_EINVAL, "'%s' is '%s', not a number",
                       n->name, v);
    *out = x;
    return 0;
  }
  case N_COND:
    if (eval(n->c, ev, &a))
      return ev->err->code;
    return eval(a != 0 ? n->a : n->b, ev, out);
  case N_UNARY:
    if (eval(n->a, ev, &a))
      return ev->err->code;
    *out = n->op == '-' ? -a : (double)(a == 0);
    return 0;
  case N_CALL:
  case N_BINARY:
    break;
  }
  /* && and || do not evaluate their right side when the left decides. */
  if (eval(n->a, ev, &a))
    return ev->err->code;
  if (n->kind == N_BINARY && ((n->op == OP_AND && a == 0) ||
                              (n->op == OP_OR && a != 0))) {
    *out = n->op == OP_OR;
    return 0;
  }
  if (n->b && eval(n->b, ev, &b))
    return ev->err->code;
  double r = 0;
  if (n->kind == N_CALL) {
    switch ((enum func)n->op) {
    case F_MIN: r = a < b ? a : b; break;
    case F_MAX: r = a > b ? a : b; break;
    case F_POW: r = pow(a, b); break;
    case F_FLOOR: r = floor(a); break;
    case F_CEIL: r = ceil(a); break;
    case F_ROUND: r = round(a); break;
    case F_SQRT: r = sqrt(a); break;
    case F_LOG2: r = log2(a); break;
    case F_ABS: r = fabs(a); break;
    case F_COUNT: break;
    }
  } else {
    switch (n->op) {
    case '+': r = a + b; break;
    case '-': r = a - b; break;
    case '*': r = a * b; break;
    case '/':
    case '%':
      if (b == 0)
        return weft_errf(ev->err, WEFT_EINVAL, "division by zero");
      r = n->op == '/' ? a / b : fmod(a, b);
      break;
    case '^': r = pow(a, b); break;
    case '<': r = a < b; break;
    case '>': r = a > b; break;
    case OP_LE: r = a <= b; break;
    case OP_GE: r = a >= b; break;
    case OP_EQ: r = a == b; break;
    case OP_NE: r = a != b; break;
    case OP_AND: r = b != 0; break;
    case OP_OR: r = b != 0; break;
    default: break;
    }
  }
  if (!isfinite(r))
    return weft_errf(ev->err, WEFT_EINVAL, "the result is not a finite "
                     "number");
  *out = r;
  return 0;
}

int expr_eval(const struct expr *e, expr_lookup_fn lookup, void *ctx,
              double *out, struct weft_err *err)
{
  struct weft_err local = {0};
  struct evalctx ev = {lookup, ctx, err ? err : &local};
  double v;
  int rc = eval(e->root, &ev, &v);
  if (!rc)
    *out = v;
  return rc;
}

void expr_format(double v, char *buf, size_t size)
{
  if (v == floor(v) && fabs(v) < 9007199254740992.0)
    snprintf(buf, size, "%.0f", v == 0 ? 0.0 : v); /* no "-0" */
  else {
    snprintf(buf, size, "%.10g", v);
    /* Rounded to 10 digits, a value near DBL_MAX reads back as infinity
     * (1.797693135e+308): write it in full. */
    if (!isfinite(strtod(buf, NULL)))
      snprintf(buf, size, "%.17g", v);
  }
}

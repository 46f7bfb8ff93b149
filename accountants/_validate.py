"""Input validation shared by the accountant layer.

Every public entry point checks its numbers here, so that bad input fails with a message that
names the parameter and the valid range (DESIGN.md, "Inputs"). Nothing is silently coerced.
"""

from __future__ import annotations

import decimal
import difflib
import math
import numbers
import operator
import os
import sys
import unicodedata

import numpy as np

#: longest a value is quoted in an error message; a longer one is shortened (see :func:`shown`)
SHOWN_MAX = 60


#: What the validators refuse where a number is expected although Python's numeric tower or numpy's type
#: tree files it as one: bools (``True`` is an int) and numpy's timedelta64, an ``np.signedinteger`` -- so a
#: ``numbers.Integral`` -- that float() and int() both refuse ("float() argument must be ... not
#: 'datetime.timedelta'" escaped from the validators as a TypeError naming no parameter).
NOT_NUMBERS = (bool, np.bool_, np.timedelta64)


def shown(value: object, limit: int = SHOWN_MAX, *, quote: bool = True) -> str:
    """``repr(value)`` for an error message, at most about ``limit`` characters.

    A whole number of more than 40 digits is shown by its magnitude ("a whole number of about
    10^400"; its digits are never built -- ``repr`` of an int beyond 4300 digits raises a ValueError
    of its own), a long text or array by its start and its length. Every validator quotes the caller's
    value through this, so a 4300-digit horizon or a 5000-character string is never echoed in full.
    ``quote=False`` shows a string as it is (the command line's own text) rather than its repr.
    """
    if isinstance(value, decimal.Decimal):
        # Python's numeric tower leaves Decimal out of numbers.Real (it refuses to mix with floats), and so do
        # the validators: refused everywhere, never converted -- the message says what to pass instead
        text = repr(value)
        text = text if len(text) <= limit else f"{text[:max(limit - 25, 10)]}...({len(text)} characters)"
        return f"{text} (a Decimal is not converted: pass float(x) or int(x))"
    if isinstance(value, (int, np.integer)) and not isinstance(value, NOT_NUMBERS):
        n = operator.index(value)  # (an int subclass's own value: int() calls its __int__, which may lie)
        if abs(n) < 10**40:
            return repr(n) if type(value) is int else repr(value)
        sign = "-" if n < 0 else ""
        return f"a whole number of about {sign}10^{int(math.log10(abs(n)))}"
    try:
        text = value if isinstance(value, str) and not quote else " ".join(repr(value).split())  # (an array's repr spans lines)
    except Exception:  # a hostile __repr__, or an object holding an int beyond 4300 digits
        return f"a {type(value).__name__}"
    if len(text) <= limit:
        return text
    return f"{text[:max(limit - 25, 10)]}...({len(text)} characters)"


def exact_text(x: float) -> str:
    """A float in a message that a reader compares with another number (a target against a certificate, a
    range's end): ``:g``'s short form where it reads back as the same float ("1e-06", "1e+30"), else every
    digit (``repr``). Session 17: ``affordable_horizon`` printed a target one ulp below 1 as "1", next to a
    certificate of 1 -- the reader could not see why 1 was out of reach."""
    x = float(x)
    if not math.isfinite(x):
        return repr(x)
    short = f"{x:g}"
    return short if float(short) == x else repr(x)


def unknown_name(kind: str, value: object, known, where: str) -> ValueError:
    """The error for a name that is not one of ``known``: the close matches when there are some
    (difflib, or names holding the given text), else every name; ``where`` says where the names
    live (e.g. ``privbandit.policies.REGISTRY``). Listing all 30 policy names for a one-letter typo
    made a 400-character message (session 10)."""
    names = sorted(known)
    if not isinstance(value, str):
        return ValueError(f"{kind} name must be a str, one of the {len(names)} names in {where}; got {shown(value)}")
    key = value.replace("-", "_").lower()
    close = difflib.get_close_matches(key, names, n=4, cutoff=0.6)
    if len(key) >= 3:  # a prefix or a fragment ("tossou" for "tossou2016-2arm")
        close += [n for n in names if key in n.replace("-", "_") and n not in close][:4 - len(close)]
    if close:
        hint = f"did you mean {', '.join(close)}? ({len(names)} names in {where})"
    else:
        hint = f"known: {', '.join(names)}"
    # a look-alike (Cyrillic 'р' for 'p', a fullwidth letter, a zero-width space) printed as itself read
    # "unknown policy 'dр_ucb'; did you mean dp_ucb" -- the same name twice: say which characters differ
    odd = [f"{c!r} (U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}) at position {i}" for i, c in enumerate(value)
           if not c.isascii() or not c.isprintable()][:3]
    where_odd = f" -- it holds {'; '.join(odd)}, not printable ASCII" if odd else ""
    return ValueError(f"unknown {kind} {shown(value)}{where_odd}; {hint}")


def physical_memory() -> int | None:
    """The machine's physical memory in bytes; None where it cannot be read (not a POSIX system:
    numpy is then the judge)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


class MemoryRefusal(ValueError):
    """:func:`check_bytes`'s refusal (a ValueError: bad input, named)."""


def check_bytes(what: str, nbytes: int, remedy: str) -> None:
    """ValueError naming ``what`` when an allocation of at least ``nbytes`` cannot fit in the machine's
    physical memory: checked before allocating, so a huge shape fails at once with its parameters named
    instead of a MemoryError (or an out-of-memory kill) from inside numpy (session 16). ``nbytes`` is a
    lower bound of what the caller allocates next, so nothing that fits is refused; ``remedy`` says
    which parameter to bring down."""
    physical = physical_memory()
    if physical is not None and nbytes > physical:
        need = f"{nbytes / 2**30:.3g} GiB" if nbytes.bit_length() < 1000 else f"about 2^{nbytes.bit_length() - 30} GiB"
        raise MemoryRefusal(f"{what} needs at least {need}, more than this machine's {physical / 2**30:.3g} GiB "
                         f"of memory: {remedy}")


def _as_float(name: str, value: object, valid: str = "") -> float:
    """``value`` as a float, or a ValueError; ``valid`` (e.g. "in (0, inf)") is the range the caller
    checks next, named already here: "epsilon must be a real number, got '0x10'" and "epsilon must not
    be NaN" left the user to guess what a valid epsilon is (DESIGN.md "Inputs"; session 13)."""
    valid = f" {valid}" if valid else ""
    if isinstance(value, NOT_NUMBERS) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a real number{valid}, got {shown(value)}")
    try:
        x = float(value)
    except OverflowError:  # a Python int beyond 1.8e308: no float holds it (was an OverflowError)
        raise ValueError(f"{name} must be a real number within the floats' range (|x| <= 1.8e308)"
                         f"{',' + valid if valid else ''}, got {shown(value)}") from None
    except Exception as exc:  # noqa: BLE001 -- a numbers.Real (registered, or a float subclass) whose
        # __float__ raises or returns a non-float (session 16): the caller's object, refused by name
        raise ValueError(f"{name} must be a real number{valid}; float() of {shown(value)} failed "
                         f"({type(exc).__name__}: {exc})") from exc
    if math.isnan(x):
        raise ValueError(f"{name} must not be NaN" + (f" (a real number{valid})" if valid else ""))
    return x


def finite(name: str, value: object) -> float:
    """Return ``value`` as a float, requiring a finite real number."""
    x = _as_float(name, value, "in (-inf, inf)")
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite real number, got {x!r}")
    return x


def positive(name: str, value: object, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float, requiring ``0 < value`` (``< inf`` unless ``allow_inf``)."""
    upper = "inf]" if allow_inf else "inf)"
    x = _as_float(name, value, f"in (0, {upper}")
    if not x > 0 or (math.isinf(x) and not allow_inf):
        raise ValueError(f"{name} must lie in (0, {upper}, got {x!r}")
    return x


def nonnegative(name: str, value: object) -> float:
    """Return ``value`` as a float, requiring ``0 <= value < inf``."""
    x = _as_float(name, value, "in [0, inf)")
    if not 0 <= x < math.inf:
        raise ValueError(f"{name} must lie in [0, inf), got {x!r}")
    return x


def probability(name: str, value: object) -> float:
    """Return ``value`` as a float, requiring ``0 < value < 1`` (a delta or a failure probability)."""
    x = _as_float(name, value, "in (0, 1)")
    if not 0 < x < 1:
        raise ValueError(f"{name} must lie in (0, 1), got {x!r}")
    if x < sys.float_info.min:  # subnormal: exp(log x) is too coarse there, the GDP conversion walked forever
        raise ValueError(f"{name} must lie in [{sys.float_info.min:.17g}, 1) (a normal float), got {x!r}")
    return x


def delta_or_zero(name: str, value: object) -> float:
    """A delta at which an epsilon is asked: exactly 0 (pure DP; session 15) or a normal float in (0, 1)."""
    x = _as_float(name, value, "0 or in [2.2250738585072014e-308, 1)")
    if x == 0.0:
        return 0.0
    if not sys.float_info.min <= x < 1:
        raise ValueError(f"{name} must be 0 (pure DP) or lie in [{sys.float_info.min:.17g}, 1) (a normal float), "
                         f"got {x!r}")
    return x


def probability_closed(name: str, value: object) -> float:
    """Return ``value`` as a float, requiring ``0 <= value < 1`` (the delta of an (eps, delta) event)."""
    x = _as_float(name, value, "in [0, 1)")
    if not 0 <= x < 1:
        raise ValueError(f"{name} must lie in [0, 1), got {x!r}")
    return x


def real_array(name: str, value: object, *, bools: bool = False) -> np.ndarray:
    """``value`` as a float array (any shape; the caller checks shape and range). Numbers only:
    ``np.asarray(x, dtype=float)`` alone reads ``"0.5"`` as 0.5 and ``True`` as 1.0, and fails on
    an int beyond the floats with an OverflowError or on text with a message naming no parameter.
    ``bools``: a boolean array is read as 0 / 1 (the audit's reward tapes, ``rng.random(shape) < p``)."""
    unmasked(name, value)
    try:
        raw = np.asarray(value)
        if bools and raw.dtype.kind == "b":
            return raw.astype(float)
        if raw.dtype.kind not in "iufO":  # text, bools, bytes, dates: not rewards or probabilities
            raise TypeError(raw.dtype)
        if not bools and raw.dtype.kind != "O" and isinstance(value, (list, tuple)) and _holds_bool(value):
            # numpy casts a bool among numbers before we see it: [0.5, True] is float64 [0.5, 1.0] (an all-bool
            # list is a bool array, refused above: a mixed one is refused the same way)
            raise TypeError("bool")
        # (an object array turns None into NaN when cast, "0.5" into 0.5 and a Decimal into a float: every
        # entry must be a number the scalar validators take -- a Decimal is refused there, so here too)
        if raw.dtype.kind == "O" and not all(isinstance(x, (numbers.Real, np.number)) and not isinstance(x, NOT_NUMBERS)
                                             for x in raw.ravel().tolist()):
            raise TypeError("mixed")
        # (a broadcast view of 10^10 entries costs nothing until it is copied as floats: named first)
        check_bytes(f"{name} of shape {raw.shape}", 8 * int(raw.size), f"{name} must hold fewer entries")
        with np.errstate(over="raise"):  # (a longdouble of 1e400 became inf with a RuntimeWarning)
            return raw.astype(float)
    except MemoryRefusal:
        raise
    except FloatingPointError:
        raise ValueError(f"{name} must be an array of real numbers within the floats' range (|x| <= 1.8e308), "
                         f"got {shown(value)}") from None
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be an array of real numbers, got {shown(value)}") from None
    except Exception as exc:  # noqa: BLE001 -- an entry's own __float__ raised (session 16): refused by name
        raise ValueError(f"{name} must be an array of real numbers; converting {shown(value)} failed "
                         f"({type(exc).__name__}: {exc})") from exc


def _holds_bool(seq) -> bool:
    """Whether a (nested) list or tuple holds a bool or numpy bool (neither can be subclassed, so the
    set of entry types answers it at C speed: ~20 ms per million entries, about what np.asarray spends)."""
    kinds = set(map(type, seq))
    if bool in kinds or np.bool_ in kinds:
        return True
    return any(_holds_bool(x) for x in seq if type(x) in (list, tuple)) if kinds & {list, tuple} else False


def unmasked(name: str, value: object) -> None:
    """ValueError when ``value`` is a numpy masked array with a masked entry: ``np.asarray`` drops the
    mask and the value under it was used as data (``Bernoulli(np.ma.masked_array([0.2, 0.5], mask=[1, 0]))``
    ran with an arm of mean 0.2). A masked array without masked entries is its data."""
    if np.ma.isMaskedArray(value) and np.ma.getmaskarray(value).any():
        raise ValueError(f"{name} must not hold masked entries (a masked array's mask is not applied): got "
                         f"{int(np.ma.count_masked(value))} masked of {np.size(value)}; pass value.filled(x) or "
                         "value.compressed()")


def choice(name: str, value: object, choices) -> str:
    """``value`` if it is one of the strings ``choices``, else a ValueError naming them. The one check of a
    named option: ``value not in choices`` alone raised numpy's "truth value of an array ... is ambiguous"
    for an array (naming no parameter) and read a list as unhashable (session 15)."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {shown(value)}")
    return value


def whole(name: str, value: object, minimum: int = 0, maximum: int | None = None) -> int:
    """``value`` as an int in [``minimum``, ``maximum``] (``maximum`` None: no upper end), from integer types only
    (a float, even an integral one, a bool or text is refused; :func:`count` is the lenient form). The value is
    read with ``operator.index`` before it is compared (``int()`` calls an int subclass's own ``__int__``, which
    may raise or lie: session 16); ValueError naming the parameter and the range otherwise. The one check of a
    whole-number parameter the deployment, ledger, mechanisms, adversarial environments and run options share
    (each had its own copy, fixed one by one in session 16)."""
    top = "inf)" if maximum is None else f"{maximum}]"
    if isinstance(value, NOT_NUMBERS) or not isinstance(value, (numbers.Integral, np.integer)):
        raise ValueError(f"{name} must be a whole number in [{minimum}, {top}, got {shown(value)}")
    try:
        n = operator.index(value)
    except Exception as exc:  # noqa: BLE001 -- a registered numbers.Integral without a working __index__
        raise ValueError(f"{name} must be a whole number in [{minimum}, {top}; operator.index() of {shown(value)} "
                         f"failed ({type(exc).__name__}: {exc})") from exc
    if n < minimum or (maximum is not None and n > maximum):
        raise ValueError(f"{name} must be a whole number in [{minimum}, {top}, got {shown(n)}")
    return n


def count(name: str, value: object) -> int:
    """Return ``value`` as an int, requiring a non-negative whole number."""
    if isinstance(value, NOT_NUMBERS) or not isinstance(value, (numbers.Integral, np.integer)):
        if isinstance(value, (float, np.floating)) and _as_float(name, value, "in [0, inf)").is_integer():
            value = int(_as_float(name, value))
        else:
            raise ValueError(f"{name} must be a whole number in [0, inf), got {shown(value)}")
    try:
        # the exact value of an int subclass (int() calls its __int__, which may raise or lie: session 16)
        n = operator.index(value)
    except Exception as exc:  # noqa: BLE001 -- a registered numbers.Integral without a working __index__
        raise ValueError(f"{name} must be a whole number in [0, inf); operator.index() of {shown(value)} "
                         f"failed ({type(exc).__name__}: {exc})") from exc
    if n < 0:
        raise ValueError(f"{name} must be a whole number in [0, inf), got {shown(n)}")
    return n

"""Token ids of every integer dtype, signed and unsigned (nanoGPT stores tokens as uint16), give
exactly what int64 ids give: getitem and its gradient, setitem, embeddings, cross-entropy targets,
masks and the MLM helpers all compute in the platform's index type."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import microtensor as mt
from transformer import GPT, TokenEmbedding
from transformer.losses import next_token_loss
from transformer.masks import padding_mask
from transformer.mlm import IGNORE, mlm_mask

INT_DTYPES = ['uint8', 'int8', 'uint16', 'int16', 'uint32', 'int32', 'uint64', 'int64']


def _ids(draw, dtype, rows, shape):
    """Ids in [0, rows) that the dtype holds (int8 and uint8: rows clipped to what fits)."""
    high = min(rows, np.iinfo(dtype).max + 1)
    return np.array(draw(st.lists(st.integers(0, high - 1), min_size=int(np.prod(shape)),
                                  max_size=int(np.prod(shape))))).reshape(shape).astype(dtype)


@given(data=st.data(), dtype=st.sampled_from(INT_DTYPES), rows=st.sampled_from([5, 300, 1000]),
       shape=st.sampled_from([(6,), (2, 3), (1, 7)]))
def test_getitem_and_its_gradient_match_int64_ids(data, dtype, rows, shape):
    ids = _ids(data.draw, dtype, rows, shape)
    W = mt.randn(rows, 3, dtype='float64', requires_grad=True)
    weights = mt.randn(*shape, 3, dtype='float64')
    results = []
    for index in (ids, ids.astype('int64')):
        W.grad = None
        y = W[mt.tensor(index)]
        (y * weights).sum().backward()
        results.append((y.numpy(), W.grad.numpy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_uint16_ids_put_the_embedding_gradient_on_the_right_rows():
    """Offsets id * d_model beyond 65535 used to wrap around in uint16 and land on other rows."""
    emb = TokenEmbedding(1000, 128)
    ids = np.array([[88, 388, 600, 900]], dtype='uint16')
    emb(mt.tensor(ids)).sum().backward()
    np.testing.assert_array_equal(np.flatnonzero(emb.weight.grad.numpy().any(axis=1)), [88, 388, 600, 900])
    np.testing.assert_array_equal(emb.weight.grad.numpy()[[88, 388, 600, 900]], np.ones((4, 128)))


def test_uint8_ids_index_a_table_of_more_than_255_rows():
    W = mt.randn(300, 2, requires_grad=True)
    ids = mt.tensor(np.array([255, 0, 255], dtype='uint8'))
    W[ids].sum().backward()
    assert W.grad.numpy()[255].tolist() == [2.0, 2.0] and W.grad.numpy()[0].tolist() == [1.0, 1.0]


@pytest.mark.parametrize('dtype', INT_DTYPES)
def test_setitem_with_small_integer_ids_matches_int64(dtype):
    for graph in (False, True):
        results = []
        for index in (np.array([3, 1, 3], dtype=dtype), np.array([3, 1, 3])):
            x = mt.zeros(5, 2, dtype='float64')
            v = mt.tensor(np.arange(6.0).reshape(3, 2), requires_grad=graph)
            x[mt.tensor(index)] = v
            if graph:
                (x * mt.arange(10.0).reshape(5, 2)).sum().backward()
            results.append((x.numpy(), v.grad.numpy() if graph else None))
        np.testing.assert_array_equal(results[0][0], results[1][0])
        if graph:
            np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize('dtype', INT_DTYPES)
def test_an_out_of_range_small_integer_id_is_a_clear_error(dtype):
    W = mt.randn(4, 2)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 of size 4"):
        W[mt.tensor(np.array([1, 5], dtype=dtype))]


def test_a_uint64_id_beyond_any_index_is_an_error_not_a_wrapped_negative():
    with pytest.raises(IndexError, match="out of bounds"):
        mt.randn(4, 2)[np.array([2 ** 64 - 1], dtype='uint64')]  # as int64 it would be -1: the last row


@given(data=st.data(), dtype=st.sampled_from(INT_DTYPES), vocab=st.sampled_from([7, 260]))
def test_cross_entropy_targets_and_ignore_index_match_int64(data, dtype, vocab):
    targets = _ids(data.draw, dtype, vocab, (2, 3))
    logits = mt.randn(2, 3, vocab, dtype='float64', requires_grad=True)
    results = []
    for t in (targets, targets.astype('int64')):
        logits.grad = None
        loss = mt.cross_entropy(logits, mt.tensor(t), ignore_index=-100)
        loss.backward()
        results.append((loss.item(), logits.grad.numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize('dtype', INT_DTYPES)
def test_gpt_trained_on_small_integer_ids_gets_the_gradients_of_int64_ids(dtype):
    high = min(300, np.iinfo(dtype).max + 1)
    ids = (np.arange(12).reshape(2, 6) * 37 % high).astype(dtype)
    grads = []
    for batch in (ids, ids.astype('int64')):
        mt.manual_seed(0)
        model = GPT(300, d_model=8, n_heads=2, n_layers=1, max_len=8)
        next_token_loss(model(mt.tensor(batch)), mt.tensor(batch)).backward()
        grads.append(model.embed.tok.weight.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


@pytest.mark.parametrize('dtype', INT_DTYPES)
def test_mlm_mask_on_small_integer_ids_ignores_what_int64_ids_ignore(dtype):
    high = min(300, np.iinfo(dtype).max + 1)
    ids = (np.arange(40).reshape(4, 10) * 7 % (high - 1) + 1).astype(dtype)
    results = []
    for batch in (ids, ids.astype('int64')):
        mt.manual_seed(3)
        inputs, labels = mlm_mask(mt.tensor(batch), mask_id=high + 5, vocab_size=high - 1, p=0.3)
        assert inputs.dtype == labels.dtype == mt.int64
        results.append((inputs.numpy(), labels.numpy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    labels = results[0][1]
    assert (labels == IGNORE).any() and ((labels == IGNORE) | (labels == ids)).all()
    assert (results[0][0][labels == IGNORE] == ids[labels == IGNORE]).all()  # unchosen positions are kept


@pytest.mark.parametrize('dtype', INT_DTYPES)
def test_padding_masks_from_small_integer_ids_match_int64(dtype):
    ids = np.array([[5, 7, 0, 0], [1, 0, 2, 0]], dtype=dtype)
    np.testing.assert_array_equal(padding_mask(mt.tensor(ids), pad_id=0).numpy(),
                                  padding_mask(mt.tensor(ids.astype('int64')), pad_id=0).numpy())
    assert not (mt.tensor(ids) == 300).any()  # exact comparisons: no uint8 id is 300 (300 % 256 = 44 is not one)
